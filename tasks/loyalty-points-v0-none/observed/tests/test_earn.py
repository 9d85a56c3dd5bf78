from decimal import Decimal
import pytest
from pointsclub.earn import points_for, receipt_points

def test_nothing_earns_nothing(observe):
    observe.compare(points_for(Decimal('0.00')), '==', 0)

def test_unknown_category(observe):
    with observe.raises():
        points_for(Decimal('10.00'), 'travel')

def test_negative_purchase(observe):
    with observe.raises():
        points_for(Decimal('-1.00'))

def test_receipt_adds_its_lines(observe):
    lines = [(Decimal('10.00'), 'grocery'), (Decimal('5.00'), 'home')]
    observe.compare(receipt_points(lines), '==', points_for(Decimal('10.00'), 'grocery') + points_for(Decimal('5.00'), 'home'))
