from decimal import Decimal
from innfolio.model import Folio
from innfolio.levy import folio_tax, total_due

def _make(goods, extra):
    folio = Folio()
    folio.add('item', goods)
    folio.extras = Decimal(extra)
    return folio

def test_hidden_published_rate(observe):
    observe(folio_tax(_make('100.00', '0.00')))

def test_hidden_base_rule(observe):
    observe(folio_tax(_make('124.95', '10.82')))

def test_hidden_total_due(observe):
    observe(total_due(_make('124.95', '10.82')))
