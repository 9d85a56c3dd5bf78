from decimal import Decimal
from payledger.journal import Journal
from payledger.settlement import settlement_fee, settle, settle_batch

def test_hidden_contract_rate(observe):
    observe(settlement_fee(Decimal('1000.00')))

def test_hidden_fractional_cent_side(observe):
    observe(settlement_fee(Decimal('583.44')))

def test_hidden_ledger_after_payout(observe):
    journal = Journal()
    settle(journal, 'acme', Decimal('583.44'))
    observe(journal.balance('fee_income'))
    observe(journal.balance('acme'))

def test_hidden_batch_total(observe):
    journal = Journal()
    total = settle_batch(journal, [('a', Decimal('1000.00')), ('b', Decimal('583.44'))])
    observe(total)
