from decimal import Decimal
from invoicer.invoice import Invoice
from invoicer.money import line_total, quantize_amount
AMOUNTS = ['10.005', '10.015', '10.006', '-3.125']

def test_hidden_policy_rounding(observe):
    observe(quantize_amount(Decimal('10.005')))
    observe(quantize_amount(Decimal('10.015')))
    observe(quantize_amount(Decimal('10.006')))
    observe(quantize_amount(Decimal('-3.125')))

def test_hidden_invoice_of_ties(observe):
    inv = Invoice()
    for amount in AMOUNTS:
        inv.add('line', Decimal(amount))
    observe(inv.total())

def test_hidden_line_total(observe):
    observe(line_total(Decimal('10.005'), 1))
