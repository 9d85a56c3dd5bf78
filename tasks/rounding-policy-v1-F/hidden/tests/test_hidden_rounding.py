from decimal import Decimal
from vatcalc.returns import TaxReturn
from vatcalc.money import round_tax, rounded_product
AMOUNTS = ['7.305', '7.315', '7.306', '-0.245']

def test_hidden_policy_rounding(observe):
    observe(round_tax(Decimal('7.305')))
    observe(round_tax(Decimal('7.315')))
    observe(round_tax(Decimal('7.306')))
    observe(round_tax(Decimal('-0.245')))

def test_hidden_total_of_ties(observe):
    doc = TaxReturn()
    for amount in AMOUNTS:
        doc.add('x', Decimal(amount))
    observe(doc.total())

def test_hidden_product(observe):
    observe(rounded_product(Decimal('7.305'), 1))
