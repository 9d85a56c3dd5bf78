from decimal import Decimal

from alpcart.model import Order
from alpcart.tax import order_tax, total_due


def _make(goods, extra):
    order = Order()
    order.add("item", goods)
    order.shipping = Decimal(extra)
    return order


def test_hidden_published_rate():
    assert order_tax(_make("100.00", "0.00")) == Decimal("9.30")


def test_hidden_base_rule():
    assert order_tax(_make("200.87", "6.08")) == Decimal("19.16")


def test_hidden_total_due():
    assert total_due(_make("200.87", "6.08")) == Decimal("206.95") + Decimal("19.16")
