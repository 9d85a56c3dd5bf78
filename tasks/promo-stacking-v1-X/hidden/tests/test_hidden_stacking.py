from decimal import Decimal

from cartwise.checkout import checkout
from cartwise.stacking import combined_rate

BASKET = [("desk", "200.00", 1)]


def test_hidden_two_codes_compound():
    r = checkout(BASKET, ["NEWS10", "CREW20"])
    assert r.total == Decimal("144.00")


def test_hidden_two_codes_compound_any_order():
    assert checkout(BASKET, ["FRIEND15", "FRIEND15", "TRADE20"]).total == checkout(BASKET, ["TRADE20", "FRIEND15"]).total
    assert checkout(BASKET, ["TRADE20", "FRIEND15"]).total == Decimal("136.00")


def test_hidden_cap_on_combined_discount():
    r = checkout(BASKET, ["CREW20", "TRADE20", "GOLD20"])
    assert r.discount == Decimal("74.00")
    assert r.total == Decimal("126.00")


def test_hidden_rate_helper():
    assert combined_rate([10, 20]) == Decimal("0.28")
    assert combined_rate([20, 20, 20, 10]) == Decimal("37") / 100
