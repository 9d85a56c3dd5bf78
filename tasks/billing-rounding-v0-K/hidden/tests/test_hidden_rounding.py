from decimal import Decimal

import pytest

from invoicer.invoice import Invoice
from invoicer.money import line_total, quantize_amount

CASES = [
    ("10.005", "10.00"),
    ("10.015", "10.01"),
    ("10.006", "10.01"),
    ("-3.125", "-3.12"),
]


@pytest.mark.parametrize("amount,expected", CASES)
def test_hidden_policy_rounding(amount, expected):
    assert quantize_amount(Decimal(amount)) == Decimal(expected)


def test_hidden_invoice_of_ties():
    inv = Invoice()
    for amount, _ in CASES:
        inv.add("line", Decimal(amount))
    assert inv.total() == sum(Decimal(e) for _, e in CASES)


def test_hidden_line_total():
    assert line_total(Decimal("10.005"), 1) == Decimal("10.00")
