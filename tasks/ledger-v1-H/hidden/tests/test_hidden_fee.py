from decimal import Decimal
from marketbooks.journal import Journal
from marketbooks.payouts import commission_for, post_payout, post_payout_batch

def test_hidden_contract_rate(observe):
    observe(commission_for(Decimal('1000.00')))

def test_hidden_fractional_cent_side(observe):
    observe(commission_for(Decimal('620.24')))

def test_hidden_ledger_after_payout(observe):
    journal = Journal()
    post_payout(journal, 'acme', Decimal('620.24'))
    observe(journal.balance('commission_income'))
    observe(journal.balance('acme'))

def test_hidden_batch_total(observe):
    journal = Journal()
    total = post_payout_batch(journal, [('a', Decimal('1000.00')), ('b', Decimal('620.24'))])
    observe(total)
