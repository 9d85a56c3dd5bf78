from decimal import Decimal
from rosterwage.hours import night_hours
from rosterwage.pay import payslip_line, shift_pay

def test_day_shift_has_no_night_hours(observe):
    observe.compare(night_hours(8, 8), '==', 0)

def test_early_morning_is_night(observe):
    observe.compare(night_hours(4, 2), '==', 2)

def test_day_shift_pay_is_the_wage(observe):
    observe.compare(shift_pay(8, 8, Decimal('15.00')), '==', Decimal('120.00'))

def test_payslip_line_shows_the_pay(observe):
    observe.truth(payslip_line(8, 8, Decimal('15.00')).endswith('120.00'))
