from decimal import Decimal
from payledger.journal import Journal
from payledger.settlement import settlement_fee, settle

def test_settlement_fee_is_not_excessive(observe):
    observe.compare(settlement_fee(Decimal('1000.00')), '<', Decimal('25.00'))

def test_merchant_receives_the_net(observe):
    journal = Journal()
    withheld = settle(journal, 'acme', Decimal('1000.00'))
    observe.compare(journal.balance('acme'), '==', Decimal('1000.00') - withheld)
    observe.compare(journal.balance('acme'), '>', Decimal('1000.00') - Decimal('25.00'))
