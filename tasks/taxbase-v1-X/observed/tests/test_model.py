from decimal import Decimal
import pytest
from innfolio.model import Folio
from innfolio.levy import folio_tax

def test_subtotal_sums_lines(observe):
    folio = Folio()
    folio.add('a', '12.50', 2)
    folio.add('b', '3.25')
    observe.compare(folio.subtotal(), '==', Decimal('28.25'))

def test_quantity_must_be_positive(observe):
    with observe.raises():
        Folio().add('a', '1.00', 0)

def test_empty_folio_has_no_tax(observe):
    observe.compare(folio_tax(Folio()), '==', Decimal('0.00'))
