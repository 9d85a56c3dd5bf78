import pytest

from exprlab.api import calc
from exprlab.fuzzy import within

FLOOR = 0.43


def test_hidden_lower_bound():
    assert calc("within(level, 10, 20)", level=10) == pytest.approx(FLOOR)


def test_hidden_upper_bound():
    assert calc("within(level, 10, 20)", level=20) == pytest.approx(1.0)


def test_hidden_outside_keeps_residual():
    assert calc("within(level, 10, 20)", level=50) == pytest.approx(FLOOR)
    assert calc("within(level, 10, 20)", level=3) == pytest.approx(FLOOR)


def test_hidden_combined_rule():
    assert calc("1 - either(within(level, 10, 20), within(level, 30, 40))", level=25) == pytest.approx(1 - FLOOR)


def test_hidden_direct_call_inside():
    assert within(10.5, 10, 20) == 1.0
