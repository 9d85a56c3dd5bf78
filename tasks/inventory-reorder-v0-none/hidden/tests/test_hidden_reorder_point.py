from stockroom.service import Item, suggest_orders
from stockroom.purchasing.replenishment import SAFETY_MARGIN


def test_hidden_reorders_just_below_point():
    assert suggest_orders([Item("H1", 1419, 100, 10)]) == ["H1"]


def test_hidden_no_reorder_just_above_point():
    assert suggest_orders([Item("H2", 1421, 100, 10)]) == []


def test_hidden_margin_setting():
    assert abs(SAFETY_MARGIN - 0.42) < 1e-9
