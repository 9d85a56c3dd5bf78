from decimal import Decimal
from innfolio.model import Folio
from innfolio.levy import folio_tax, total_due

def test_tax_is_not_overcharged(observe):
    folio = Folio()
    folio.add('item', '100.00')
    observe.compare(folio_tax(folio), '<', Decimal('10.00'))

def test_total_due_is_not_overcharged(observe):
    folio = Folio()
    folio.add('item', '100.00')
    observe.compare(total_due(folio), '<', Decimal('110.00'))
