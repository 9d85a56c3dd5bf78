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
    observe([folio_tax(_make(goods, extra)) for goods, extra in [('300.32', '16.12'), ('266.14', '15.15'), ('110.67', '2.61'), ('151.88', '7.66'), ('345.37', '5.44'), ('320.79', '10.06'), ('217.29', '5.94'), ('331.96', '6.59'), ('50.09', '16.01'), ('108.4', '11.95'), ('371.81', '13.3'), ('109.7', '8.35')]])

def test_hidden_total_due(observe):
    observe([total_due(_make(goods, extra)) for goods, extra in [('300.32', '16.12'), ('266.14', '15.15'), ('110.67', '2.61'), ('151.88', '7.66'), ('345.37', '5.44'), ('320.79', '10.06'), ('217.29', '5.94'), ('331.96', '6.59'), ('50.09', '16.01'), ('108.4', '11.95'), ('371.81', '13.3'), ('109.7', '8.35')]])
