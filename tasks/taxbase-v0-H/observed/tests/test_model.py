from decimal import Decimal
import pytest
from alpcart.model import Order
from alpcart.tax import order_tax

def test_subtotal_sums_lines(observe):
    order = Order()
    order.add('a', '12.50', 2)
    order.add('b', '3.25')
    observe.compare(order.subtotal(), '==', Decimal('28.25'))

def test_quantity_must_be_positive(observe):
    with observe.raises():
        Order().add('a', '1.00', 0)

def test_empty_order_has_no_tax(observe):
    observe.compare(order_tax(Order()), '==', Decimal('0.00'))
