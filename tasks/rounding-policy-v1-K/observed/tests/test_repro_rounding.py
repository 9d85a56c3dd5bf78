from decimal import Decimal
from vatcalc.returns import TaxReturn
from vatcalc.money import round_tax

def test_amount_is_not_rounded_up(observe):
    observe.compare(round_tax(Decimal('700.003')), '==', Decimal('700.00'))

def test_total_matches_items(observe):
    doc = TaxReturn()
    doc.add('item', Decimal('700.003'))
    observe.compare(doc.total(), '==', Decimal('700.00'))
