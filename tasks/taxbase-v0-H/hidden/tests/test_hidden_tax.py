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
    observe([order_tax(_make(goods, extra)) for goods, extra in [('293.87', '5.22'), ('395.51', '15.06'), ('116.82', '16.57'), ('268.4', '14.48'), ('315.25', '9.15'), ('339.08', '6.52'), ('140.11', '4.15'), ('316.74', '18.88'), ('365.27', '13.52'), ('391.35', '4.94'), ('60.45', '18.75'), ('387.82', '17.32')]])

def test_hidden_total_due(observe):
    observe([total_due(_make(goods, extra)) for goods, extra in [('293.87', '5.22'), ('395.51', '15.06'), ('116.82', '16.57'), ('268.4', '14.48'), ('315.25', '9.15'), ('339.08', '6.52'), ('140.11', '4.15'), ('316.74', '18.88'), ('365.27', '13.52'), ('391.35', '4.94'), ('60.45', '18.75'), ('387.82', '17.32')]])
