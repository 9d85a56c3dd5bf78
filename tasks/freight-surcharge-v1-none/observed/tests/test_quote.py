from decimal import Decimal
import pytest
from cargoquote.quote import quote
from cargoquote.rates import base_freight
from cargoquote.surcharge import surcharge_line, with_surcharge

def test_base_freight_minimum(observe):
    observe.compare(base_freight(1, 'local'), '==', Decimal('25.00'))

def test_unknown_zone(observe):
    with observe.raises():
        base_freight(10, 'moon')

def test_quote_is_base_plus_surcharge(observe):
    observe.compare(quote(500, 'regional'), '==', with_surcharge(base_freight(500, 'regional')))

def test_surcharge_line_names_the_percent(observe):
    observe.compare('%', 'in', surcharge_line(Decimal('100.00')))
