from decimal import Decimal
from yenbill.invoice import Invoice
from yenbill.money import quantize_amount

def test_line_is_not_overcharged(observe):
    observe.compare(quantize_amount(Decimal('1200.4')), '==', Decimal('1200'))

def test_invoice_total_matches_lines(observe):
    inv = Invoice()
    inv.add('support', Decimal('1200.4'))
    observe.compare(inv.total(), '==', Decimal('1200'))
