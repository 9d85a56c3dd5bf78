from decimal import Decimal
from vatcalc.returns import TaxReturn
from vatcalc.money import round_tax

def test_amount_is_not_rounded_up(observe):
    observe.compare(round_tax(Decimal('7.301')), '==', Decimal('7.30'))

def test_total_matches_items(observe):
    doc = TaxReturn()
    doc.add('item', Decimal('7.301'))
    observe.compare(doc.total(), '==', Decimal('7.30'))
