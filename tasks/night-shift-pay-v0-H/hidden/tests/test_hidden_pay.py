from datetime import date, timedelta
from decimal import Decimal
from shiftpay.pay import shift_pay, supplement_on

def test_hidden_night_shifts_by_day(observe):
    start = date(2023, 10, 1)
    observe([shift_pay(start + timedelta(days=k), 22, 8, Decimal('16.00')) for k in range(0, 455, 2)])

def test_hidden_partial_nights(observe):
    observe([shift_pay(date(2024, 9, 3), h, 6, Decimal('14.50')) for h in range(24)])

def test_hidden_supplement_by_month(observe):
    observe([supplement_on(date(2024, m, 15)) for m in range(1, 13)])
