from decimal import Decimal

from payledger.journal import Journal
from payledger.settlement import settlement_fee, settle, settle_batch


def test_hidden_contract_rate():
    assert settlement_fee(Decimal("1000.00")) == Decimal("8.90")


def test_hidden_fractional_cent_side():
    assert settlement_fee(Decimal("583.44")) == Decimal("5.20")


def test_hidden_ledger_after_payout():
    journal = Journal()
    settle(journal, "acme", Decimal("583.44"))
    assert journal.balance("fee_income") == Decimal("5.20")
    assert journal.balance("acme") == Decimal("583.44") - Decimal("5.20")


def test_hidden_batch_total():
    journal = Journal()
    total = settle_batch(journal, [("a", Decimal("1000.00")), ("b", Decimal("583.44"))])
    assert total == Decimal("8.90") + Decimal("5.20")
