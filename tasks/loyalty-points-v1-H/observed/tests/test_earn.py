from decimal import Decimal
import pytest
from stampcard.earn import balance_after, points_for

def test_nothing_earns_nothing(observe):
    observe.compare(points_for(Decimal('0.00')), '==', 0)

def test_negative_purchase(observe):
    with observe.raises():
        points_for(Decimal('-1.00'))

def test_balance_without_activity(observe):
    observe.compare(balance_after(120, [], []), '==', 120)
