from decimal import Decimal
from rosterwage.hours import night_hours
from rosterwage.pay import shift_pay

def test_the_22_oclock_hour_is_a_night_hour(observe):
    observe.compare(night_hours(22, 1), '==', 1)
    observe.compare(shift_pay(22, 1, Decimal('15.00')), '>', Decimal('15.00'))
