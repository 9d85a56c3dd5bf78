from datetime import date, timedelta
from decimal import Decimal
from cardtariff.fees import fee, percent_on

def test_hidden_days_around_the_change(observe):
    start = date(2023, 9, 1)
    observe([fee(Decimal('1000.00'), start + timedelta(days=k)) for k in range(0, 570, 3)])

def test_hidden_amounts(observe):
    day = date(2024, 11, 20)
    observe([fee(Decimal(cents) / 100, day) for cents in range(0, 1000001, 8111)])

def test_hidden_old_payments_keep_their_tariff(observe):
    observe([fee(Decimal('999.99'), date(2022, m, 15)) for m in range(1, 13)])
    observe(percent_on(date(2023, 12, 31)))
