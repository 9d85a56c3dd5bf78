from decimal import Decimal
import pytest
from garagepay.barrier import charge, receipt_line

def test_grace_period_is_free(observe):
    observe.compare(charge(10, 'central'), '==', Decimal('0.00'))

def test_unknown_site(observe):
    with observe.raises():
        charge(30, 'harbour')

def test_negative_stay(observe):
    with observe.raises():
        charge(-1)

def test_receipt_shows_the_total(observe):
    observe.truth(receipt_line(30).endswith(str(charge(30))))
