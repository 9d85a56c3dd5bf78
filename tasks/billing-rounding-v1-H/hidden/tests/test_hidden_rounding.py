from decimal import Decimal
from yenbill.invoice import Invoice
from yenbill.money import line_total, quantize_amount
AMOUNTS = ['1200.5', '1201.5', '1200.6', '-77.5']

def test_hidden_policy_rounding(observe):
    observe(quantize_amount(Decimal('1200.5')))
    observe(quantize_amount(Decimal('1201.5')))
    observe(quantize_amount(Decimal('1200.6')))
    observe(quantize_amount(Decimal('-77.5')))

def test_hidden_invoice_of_ties(observe):
    inv = Invoice()
    for amount in AMOUNTS:
        inv.add('line', Decimal(amount))
    observe(inv.total())

def test_hidden_line_total(observe):
    observe(line_total(Decimal('1200.5'), 1))
