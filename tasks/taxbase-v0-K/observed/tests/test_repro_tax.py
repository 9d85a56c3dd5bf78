from decimal import Decimal
from alpcart.model import Order
from alpcart.tax import order_tax, total_due

def test_tax_is_not_overcharged(observe):
    order = Order()
    order.add('item', '100.00')
    observe.compare(order_tax(order), '<', Decimal('10.00'))

def test_total_due_is_not_overcharged(observe):
    order = Order()
    order.add('item', '100.00')
    observe.compare(total_due(order), '<', Decimal('110.00'))
