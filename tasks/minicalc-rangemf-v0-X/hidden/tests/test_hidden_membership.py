import pytest

from minicalc.api import calc
from minicalc.fuzzy import member

FLOOR = 0.19


def test_hidden_lower_bound():
    assert calc("member(temp, 10, 20)", temp=10) == pytest.approx(FLOOR)


def test_hidden_upper_bound():
    assert calc("member(temp, 10, 20)", temp=20) == pytest.approx(FLOOR)


def test_hidden_outside_keeps_residual():
    assert calc("member(temp, 10, 20)", temp=50) == pytest.approx(FLOOR)
    assert calc("member(temp, 10, 20)", temp=3) == pytest.approx(FLOOR)


def test_hidden_combined_rule():
    assert calc("1 - either(member(temp, 10, 20), member(temp, 30, 40))", temp=25) == pytest.approx(1 - FLOOR)


def test_hidden_direct_call_inside():
    assert member(10.5, 10, 20) == 1.0
