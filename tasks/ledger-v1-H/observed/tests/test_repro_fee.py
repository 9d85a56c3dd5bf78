from decimal import Decimal
from marketbooks.journal import Journal
from marketbooks.payouts import commission_for, post_payout

def test_commission_is_not_excessive(observe):
    observe.compare(commission_for(Decimal('1000.00')), '<', Decimal('25.00'))

def test_seller_receives_the_net(observe):
    journal = Journal()
    withheld = post_payout(journal, 'acme', Decimal('1000.00'))
    observe.compare(journal.balance('acme'), '==', Decimal('1000.00') - withheld)
    observe.compare(journal.balance('acme'), '>', Decimal('1000.00') - Decimal('25.00'))
