from decimal import Decimal
from payslip.slip import Payslip
from payslip.cents import round_pay

def test_amount_is_not_rounded_up(observe):
    observe.compare(round_pay(Decimal('1830.002')), '==', Decimal('1830.00'))

def test_total_matches_items(observe):
    doc = Payslip()
    doc.add('item', Decimal('1830.002'))
    observe.compare(doc.total(), '==', Decimal('1830.00'))
