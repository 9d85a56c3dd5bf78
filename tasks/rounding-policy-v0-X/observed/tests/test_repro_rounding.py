from decimal import Decimal
from journal.entries import Entry
from journal.amounts import round_posting

def test_amount_is_not_rounded_up(observe):
    observe.compare(round_posting(Decimal('2500.004')), '==', Decimal('2500.00'))

def test_total_matches_items(observe):
    doc = Entry()
    doc.add('item', Decimal('2500.004'))
    observe.compare(doc.total(), '==', Decimal('2500.00'))
