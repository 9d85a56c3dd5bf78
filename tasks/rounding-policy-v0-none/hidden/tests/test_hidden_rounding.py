from decimal import Decimal

import pytest

from journal.entries import Entry
from journal.amounts import round_posting, rounded_product

CASES = [
    ("25.005", "25.00"),
    ("25.015", "25.01"),
    ("25.006", "25.01"),
    ("-4.125", "-4.12"),
]


@pytest.mark.parametrize("amount,expected", CASES)
def test_hidden_policy_rounding(amount, expected):
    assert round_posting(Decimal(amount)) == Decimal(expected)


def test_hidden_total_of_ties():
    doc = Entry()
    for amount, _ in CASES:
        doc.add("x", Decimal(amount))
    assert doc.total() == sum(Decimal(e) for _, e in CASES)


def test_hidden_product():
    assert rounded_product(Decimal("25.005"), 1) == Decimal("25.00")
