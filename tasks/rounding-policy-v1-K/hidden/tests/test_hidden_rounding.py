from decimal import Decimal

import pytest

from vatcalc.returns import TaxReturn
from vatcalc.money import round_tax, rounded_product

CASES = [
    ("7.305", "7.30"),
    ("7.315", "7.31"),
    ("7.306", "7.31"),
    ("-0.245", "-0.24"),
]


@pytest.mark.parametrize("amount,expected", CASES)
def test_hidden_policy_rounding(amount, expected):
    assert round_tax(Decimal(amount)) == Decimal(expected)


def test_hidden_total_of_ties():
    doc = TaxReturn()
    for amount, _ in CASES:
        doc.add("x", Decimal(amount))
    assert doc.total() == sum(Decimal(e) for _, e in CASES)


def test_hidden_product():
    assert rounded_product(Decimal("7.305"), 1) == Decimal("7.30")
