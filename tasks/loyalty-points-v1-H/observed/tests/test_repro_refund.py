from decimal import Decimal
from stampcard.earn import points_for, points_for_refund

def test_a_refund_takes_back_its_points(observe):
    amount = Decimal('80.00')
    observe.compare(points_for(amount), '>', 0)
    observe.compare(points_for(amount) + points_for_refund(amount), '==', 0)
