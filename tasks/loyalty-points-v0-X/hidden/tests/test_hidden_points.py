from decimal import Decimal
from pointsclub.earn import CATEGORIES, points_for, receipt_points

def test_hidden_every_category(observe):
    observe({c: [points_for(Decimal(k) / 100, c) for k in range(0, 50000, 137)] for c in CATEGORIES})

def test_hidden_mixed_receipt(observe):
    lines = [(Decimal(k) / 10, c) for k in (99, 250, 1234, 4999) for c in CATEGORIES]
    observe(receipt_points(lines))
