from decimal import Decimal
from marketbooks.journal import Journal
from marketbooks.payouts import commission_for, post_payout, post_payout_batch

def cents(amount):
    return int(amount * 100)

def test_hidden_contract_rate(observe):
    observe(commission_for(Decimal('1000.00')))

def test_hidden_fees_in_cents_over_amounts(observe):
    amounts = [Decimal(n) / 100 for n in range(2001, 90000, 1237)]
    observe([cents(commission_for(a)) for a in amounts])

def test_hidden_ledger_after_payouts(observe):
    journal = Journal()
    for n in range(2001, 90000, 4999):
        post_payout(journal, f'p{n}', Decimal(n) / 100)
    observe(cents(journal.balance('commission_income')))

def test_hidden_batch_total(observe):
    journal = Journal()
    total = post_payout_batch(journal, [('a', Decimal('1000.00')), ('b', Decimal('123.45'))])
    observe(cents(total))
