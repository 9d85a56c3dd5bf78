from datetime import date
from decimal import Decimal
from shiftpay.pay import shift_pay

def test_july_2024_night_shift_is_paid_the_new_supplement(observe):
    wage = Decimal('16.00')
    observe.compare(shift_pay(date(2024, 7, 2), 22, 8, wage), '!=', shift_pay(date(2023, 7, 4), 22, 8, wage))
