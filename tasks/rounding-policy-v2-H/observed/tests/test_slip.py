from decimal import Decimal
import pytest
from payslip.slip import Payslip
from payslip.cents import as_decimal

def test_as_decimal_keeps_decimals(observe):
    observe.compare(as_decimal(Decimal('2.50')), '==', Decimal('2.50'))

def test_as_decimal_from_float_goes_through_str(observe):
    observe.compare(as_decimal(0.1), '==', Decimal('0.1'))

def test_round_amounts_are_unchanged(observe):
    doc = Payslip()
    doc.add('a', Decimal('40.00'))
    observe.compare(doc.total(), '==', Decimal('40.00'))

def test_empty_label_rejected(observe):
    with observe.raises():
        Payslip().add('', 1)
