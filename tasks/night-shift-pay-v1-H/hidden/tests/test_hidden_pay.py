from decimal import Decimal
from rosterwage.pay import shift_pay

def test_hidden_every_start_hour(observe):
    observe([shift_pay(h, n, Decimal(1450) / 100) for h in range(24) for n in (1, 4, 8, 12)])

def test_hidden_long_night_shifts(observe):
    observe([shift_pay(22, n, Decimal(2135) / 100) for n in range(0, 48, 3)])
