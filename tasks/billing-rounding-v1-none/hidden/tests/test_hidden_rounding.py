from decimal import Decimal

import pytest

from yenbill.invoice import Invoice
from yenbill.money import line_total, quantize_amount

CASES = [
    ("1200.5", "1200"),
    ("1201.5", "1201"),
    ("1200.6", "1201"),
    ("-77.5", "-77"),
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
    assert line_total(Decimal("1200.5"), 1) == Decimal("1200")
