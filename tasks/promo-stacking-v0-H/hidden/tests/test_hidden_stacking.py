from decimal import Decimal

from tillkit.checkout import checkout
from tillkit.stacking import combined_rate

BASKET = [("desk", "200.00", 1)]


def test_hidden_two_codes_compound():
    r = checkout(BASKET, ["SPRING10", "STAFF20"])
    assert r.total == Decimal("144.00")


def test_hidden_two_codes_compound_any_order():
    assert checkout(BASKET, ["WELCOME15", "WELCOME15", "BULK20"]).total == checkout(BASKET, ["BULK20", "WELCOME15"]).total
    assert checkout(BASKET, ["BULK20", "WELCOME15"]).total == Decimal("136.00")


def test_hidden_cap_on_combined_discount():
    r = checkout(BASKET, ["STAFF20", "BULK20", "VIP20"])
    assert r.discount == Decimal("86.00")
    assert r.total == Decimal("114.00")


def test_hidden_rate_helper():
    assert combined_rate([10, 20]) == Decimal("0.28")
    assert combined_rate([20, 20, 20, 10]) == Decimal("43") / 100
