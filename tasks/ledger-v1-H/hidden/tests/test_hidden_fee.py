from decimal import Decimal

from marketbooks.journal import Journal
from marketbooks.payouts import commission_for, post_payout, post_payout_batch


def test_hidden_contract_rate():
    assert commission_for(Decimal("1000.00")) == Decimal("103.60")


def test_hidden_fractional_cent_side():
    assert commission_for(Decimal("620.24")) == Decimal("64.25")


def test_hidden_ledger_after_payout():
    journal = Journal()
    post_payout(journal, "acme", Decimal("620.24"))
    assert journal.balance("commission_income") == Decimal("64.25")
    assert journal.balance("acme") == Decimal("620.24") - Decimal("64.25")


def test_hidden_batch_total():
    journal = Journal()
    total = post_payout_batch(journal, [("a", Decimal("1000.00")), ("b", Decimal("620.24"))])
    assert total == Decimal("103.60") + Decimal("64.25")
