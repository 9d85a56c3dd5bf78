from decimal import Decimal
from journal.entries import Entry
from journal.amounts import round_posting, rounded_product
AMOUNTS = ['25.005', '25.015', '25.006', '-4.125']

def test_hidden_policy_rounding(observe):
    observe(round_posting(Decimal('25.005')))
    observe(round_posting(Decimal('25.015')))
    observe(round_posting(Decimal('25.006')))
    observe(round_posting(Decimal('-4.125')))

def test_hidden_total_of_ties(observe):
    doc = Entry()
    for amount in AMOUNTS:
        doc.add('x', Decimal(amount))
    observe(doc.total())

def test_hidden_product(observe):
    observe(rounded_product(Decimal('25.005'), 1))
