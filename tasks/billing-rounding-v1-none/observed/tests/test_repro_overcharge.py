from decimal import Decimal
from yenbill.invoice import Invoice
from yenbill.money import quantize_amount

def test_line_is_not_overcharged(observe):
    observe.compare(quantize_amount(Decimal('12000.4')), '==', Decimal('12000'))

def test_invoice_total_matches_lines(observe):
    inv = Invoice()
    inv.add('support', Decimal('12000.4'))
    observe.compare(inv.total(), '==', Decimal('12000'))
