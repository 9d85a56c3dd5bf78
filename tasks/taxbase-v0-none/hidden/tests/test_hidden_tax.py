from decimal import Decimal
from alpcart.model import Order
from alpcart.tax import order_tax, total_due

def _make(goods, extra):
    order = Order()
    order.add('item', goods)
    order.shipping = Decimal(extra)
    return order

def test_hidden_published_rate(observe):
    observe(order_tax(_make('100.00', '0.00')))

def test_hidden_base_rule(observe):
    observe(order_tax(_make('200.87', '6.08')))

def test_hidden_total_due(observe):
    observe(total_due(_make('200.87', '6.08')))
