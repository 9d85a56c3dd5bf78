from decimal import Decimal
from payslip.slip import Payslip
from payslip.cents import round_pay, rounded_product
AMOUNTS = ['1830.115', '1830.125', '1830.116', '-12.335']

def test_hidden_policy_rounding(observe):
    observe(round_pay(Decimal('1830.115')))
    observe(round_pay(Decimal('1830.125')))
    observe(round_pay(Decimal('1830.116')))
    observe(round_pay(Decimal('-12.335')))

def test_hidden_total_of_ties(observe):
    doc = Payslip()
    for amount in AMOUNTS:
        doc.add('x', Decimal(amount))
    observe(doc.total())

def test_hidden_product(observe):
    observe(rounded_product(Decimal('1830.115'), 1))
