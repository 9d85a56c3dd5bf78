from decimal import Decimal
from invoicer.invoice import Invoice
from invoicer.money import quantize_amount

def test_line_is_not_overcharged(observe):
    observe.compare(quantize_amount(Decimal('10.004')), '==', Decimal('10.00'))

def test_invoice_total_matches_lines(observe):
    inv = Invoice()
    inv.add('support', Decimal('10.004'))
    observe.compare(inv.total(), '==', Decimal('10.00'))
