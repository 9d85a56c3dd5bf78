from decimal import Decimal
from stampcard.earn import balance_after, points_for, points_for_refund

def test_hidden_points_by_amount(observe):
    observe([points_for(Decimal(k) / 100) for k in range(0, 60000, 113)])

def test_hidden_refunds(observe):
    observe([points_for_refund(Decimal(k) / 100) for k in range(0, 60000, 997)])

def test_hidden_balance(observe):
    observe(balance_after(500, [Decimal(k) / 10 for k in (99, 1234, 4321)], [Decimal(k) / 10 for k in (250, 999)]))
