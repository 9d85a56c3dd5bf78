import pytest
from stockroom.service import Item, suggest_orders
from stockroom.purchasing.replenishment import SAFETY_MARGIN

def test_hidden_reorder_point(observe):
    stock = [Item(f'S{n}', n, 100, 10) for n in range(1250, 1751)]
    observe(suggest_orders(stock))

def test_hidden_point_scales_with_demand(observe):
    stock = [Item(f'T{n}', n, 37, 7) for n in range(300, 500)]
    observe(suggest_orders(stock))

def test_hidden_margin_setting(observe):
    observe(SAFETY_MARGIN)
