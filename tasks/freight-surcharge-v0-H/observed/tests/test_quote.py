from datetime import date
from decimal import Decimal
import pytest
from haulrate.quote import quote
from haulrate.rates import base_freight
from haulrate.surcharge import surcharge_line, with_surcharge

def test_base_freight_minimum(observe):
    observe.compare(base_freight(1, 'local'), '==', Decimal('25.00'))

def test_unknown_zone(observe):
    with observe.raises():
        base_freight(10, 'moon')

def test_before_any_surcharge(observe):
    with observe.raises():
        with_surcharge(Decimal('100.00'), date(2022, 6, 1))

def test_quote_is_base_plus_surcharge(observe):
    day = date(2023, 5, 2)
    observe.compare(quote(500, 'regional', day), '==', with_surcharge(base_freight(500, 'regional'), day))

def test_surcharge_line_names_the_percent(observe):
    observe.compare('%', 'in', surcharge_line(Decimal('100.00'), date(2023, 5, 2)))
