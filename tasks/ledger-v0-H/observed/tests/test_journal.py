from decimal import Decimal
import pytest
from payledger.journal import Journal, UnbalancedEntry
from payledger.settlement import settle

def test_unbalanced_entry_is_rejected(observe):
    with observe.raises():
        Journal().post('bad', [('a', Decimal('1.00')), ('b', Decimal('-0.99'))])

def test_balances_start_at_zero(observe):
    observe.compare(Journal().balance('nobody'), '==', 0)

def test_payout_entry_balances(observe):
    journal = Journal()
    settle(journal, 'acme', Decimal('250.00'))
    memo, legs = journal.entries[0]
    observe.compare(sum((amount for _, amount in legs)), '==', 0)
    observe.compare(journal.balance('clearing'), '==', Decimal('-250.00'))
