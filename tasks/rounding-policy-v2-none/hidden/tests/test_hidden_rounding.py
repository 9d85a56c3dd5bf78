from decimal import Decimal

import pytest

from payslip.slip import Payslip
from payslip.cents import round_pay, rounded_product

CASES = [
    ("1830.115", "1830.11"),
    ("1830.125", "1830.12"),
    ("1830.116", "1830.12"),
    ("-12.335", "-12.33"),
]


@pytest.mark.parametrize("amount,expected", CASES)
def test_hidden_policy_rounding(amount, expected):
    assert round_pay(Decimal(amount)) == Decimal(expected)


def test_hidden_total_of_ties():
    doc = Payslip()
    for amount, _ in CASES:
        doc.add("x", Decimal(amount))
    assert doc.total() == sum(Decimal(e) for _, e in CASES)


def test_hidden_product():
    assert rounded_product(Decimal("1830.115"), 1) == Decimal("1830.11")
