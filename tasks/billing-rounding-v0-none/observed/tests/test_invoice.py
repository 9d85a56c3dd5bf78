from decimal import Decimal
import pytest
from invoicer.invoice import Invoice
from invoicer.money import to_decimal

def test_to_decimal_keeps_decimals(observe):
    observe.compare(to_decimal(Decimal('2.50')), '==', Decimal('2.50'))

def test_to_decimal_from_float_goes_through_str(observe):
    observe.compare(to_decimal(0.1), '==', Decimal('0.1'))

def test_round_amounts_are_unchanged(observe):
    inv = Invoice()
    inv.add('hosting', Decimal('0.01') * 4000)
    observe.compare(inv.total(), '==', Decimal('0.01') * 4000)

def test_empty_description_rejected(observe):
    with observe.raises():
        Invoice().add('', 1)
