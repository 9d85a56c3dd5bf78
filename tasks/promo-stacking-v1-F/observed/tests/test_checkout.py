from decimal import Decimal
import pytest
from cartwise.checkout import checkout, subtotal_of
from cartwise.promotions import resolve

def test_subtotal(observe):
    observe.compare(subtotal_of([('tea', '4.50', 2), ('cake', '3.25', 1)]), '==', Decimal('12.25'))

def test_no_codes_no_discount(observe):
    r = checkout([('tea', '4.50', 2)])
    observe.compare((r.discount, r.total), '==', (Decimal('0.00'), Decimal('9.00')))

def test_single_code(observe):
    r = checkout([('box', '80.00', 1)], ['NEWS10'])
    observe.compare(r.total, '==', Decimal('72.00'))

def test_codes_are_case_insensitive_and_counted_once(observe):
    observe.compare(resolve(['friend15', 'FRIEND15']), '==', [15])

def test_unknown_code(observe):
    with observe.raises():
        checkout([('box', '80.00', 1)], ['NOPE'])

def test_bad_quantity(observe):
    with observe.raises():
        subtotal_of([('box', '80.00', 0)])
