from datetime import date
from decimal import Decimal
from cardtariff.fees import fee

def test_payment_of_june_2024_uses_the_current_tariff(observe):
    observe.compare(fee(Decimal('1000.00'), date(2024, 6, 12)), '!=', fee(Decimal('1000.00'), date(2023, 6, 12)))
