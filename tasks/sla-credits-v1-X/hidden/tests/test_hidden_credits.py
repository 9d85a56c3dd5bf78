from decimal import Decimal
from slabook.credits import credit
from slabook.invoice import amount_due

def test_hidden_credit_by_downtime(observe):
    observe([credit(Decimal('1000.00'), m) for m in range(0, 700)])

def test_hidden_amount_due(observe):
    observe([amount_due(Decimal(24990) / 100, m) for m in range(0, 3000, 17)])
