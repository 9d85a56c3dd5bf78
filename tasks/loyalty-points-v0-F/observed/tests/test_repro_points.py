from decimal import Decimal
from pointsclub.earn import points_for

def test_cents_count_towards_points(observe):
    observe.compare(points_for(Decimal('9.99'), 'grocery'), '>', points_for(Decimal('9.00'), 'grocery'))
