from datetime import date
from decimal import Decimal
import pytest
from shiftpay.hours import night_hours
from shiftpay.pay import payslip_line, shift_pay

def test_day_shift_has_no_night_hours(observe):
    observe.compare(night_hours(8, 8), '==', 0)

def test_night_shift_hours(observe):
    observe.compare(night_hours(22, 8), '==', 8)

def test_day_shift_pay_is_the_wage(observe):
    observe.compare(shift_pay(date(2023, 3, 1), 8, 8, Decimal('15.00')), '==', Decimal('120.00'))

def test_before_any_agreement(observe):
    with observe.raises():
        shift_pay(date(2021, 6, 1), 22, 8, Decimal('15.00'))

def test_payslip_line_shows_the_pay(observe):
    day = date(2023, 3, 1)
    observe.truth(payslip_line(day, 8, 8, Decimal('15.00')).endswith(str(shift_pay(day, 8, 8, Decimal('15.00')))))
