from decimal import Decimal
from payledger.journal import Journal
from payledger.settlement import settlement_fee, settle, settle_batch

def cents(amount):
    return int(amount * 100)

def test_hidden_contract_rate(observe):
    observe(settlement_fee(Decimal('1000.00')))

def test_hidden_fees_in_cents_over_amounts(observe):
    amounts = [Decimal(n) / 100 for n in range(2001, 90000, 1237)]
    observe([cents(settlement_fee(a)) for a in amounts])

def test_hidden_ledger_after_payouts(observe):
    journal = Journal()
    for n in range(2001, 90000, 4999):
        settle(journal, f'p{n}', Decimal(n) / 100)
    observe(cents(journal.balance('fee_income')))

def test_hidden_batch_total(observe):
    journal = Journal()
    total = settle_batch(journal, [('a', Decimal('1000.00')), ('b', Decimal('123.45'))])
    observe(cents(total))
