from decimal import Decimal
from uptimeledger.credits import credit

def test_no_downtime_no_credit(observe):
    observe.compare(credit(Decimal('1000.00'), 0), '==', Decimal('0.00'))
