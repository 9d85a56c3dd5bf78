"""ledger: a double-entry settlement ledger withholds a contract fee with a house rounding side.

Two-part fact, drawn jointly: the fee rate in basis points (a non-round contract value) and which
side absorbs the fractional cent (the fee is rounded up, so the payee absorbs it, or down, so the
house does). HEAD withholds a far too high rate with half-up rounding; the repro only bounds the
fee on a round gross amount, which a round conventional rate also satisfies. Hidden tests pin the
rate on that amount and the rounding on a fixed sweep of amounts (in whole cents, so every
candidate rule is told apart exactly); no input depends on the fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sdebench.generation.facts import accepted, space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, pick
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "ledger"
CENT = Decimal("0.01")
BPS_RANGE = (111, 249)  # the draw's rates (1.11 %..2.49 %)
AVOID = (100, 125, 150, 175, 200, 250)  # round rates the fact stays away from
ROUND_BPS = (100, 150, 200, 250, 125, 175, 50, 300, 500)  # rates a guess would start from


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names and the wrong/guessed rates."""

    project: str
    package: str
    module: str  # file name of the rule module
    fee: str  # what the withheld amount is called
    func: str  # the fee function
    post: str  # the posting function
    payee: str  # who receives the net
    house: str  # who keeps the fee
    income: str  # the fee income account
    head_bps: int
    conv_bps: int
    bound: str  # the repro's upper bound on the fee of 1000.00


SHAPES = {
    0: Shape("payledger", "payledger", "settlement", "settlement fee", "settlement_fee", "settle",
             "merchant", "acquirer", "fee_income", 290, 150, "25.00"),
    1: Shape("marketbooks", "marketbooks", "payouts", "commission", "commission_for", "post_payout",
             "seller", "marketplace", "commission_income", 2500, 200, "25.00"),
}


# A candidate's rounding: the fact's two sides, and the modes a guess would try.
MODES = {"up": "ROUND_UP", "down": "ROUND_DOWN", "half-up": "ROUND_HALF_UP", "half-even": "ROUND_HALF_EVEN"}


def drawable(bps: int) -> bool:
    """Whether the draw may pick a rate of `bps`: not a multiple of 5, more than 2 bps off round rates."""
    return bool(bps % 5) and all(abs(bps - a) > 2 for a in AVOID)


# The draw: uniform over every (rate, side) pair it accepts.
DRAWN = [(bps, side) for bps in accepted(*BPS_RANGE, drawable) for side in ("up", "down")]
# Round rates with every mode first, then every rate of the draw's range and 3 bps around it with
# every mode, drawable or not.
SPACE = space([(bps, m) for bps in ROUND_BPS for m in MODES], DRAWN,
              [(bps, m) for bps in range(BPS_RANGE[0] - 3, BPS_RANGE[1] + 4) for m in MODES])


def fact_of(variant: int) -> tuple[int, str]:
    """The fee rate in bps (not a multiple of 5, away from round rates) and the rounding side."""
    return pick(f"{FAMILY}-fact-{variant}", DRAWN)


def fee(gross: Decimal, bps: int, mode: str) -> Decimal:
    """The fee on `gross` at `bps` with a Decimal rounding mode."""
    return (gross * bps / Decimal(10_000)).quantize(CENT, rounding=mode)


def rule_module(s: Shape, bps: int, mode: str, batch: bool) -> str:
    """The rule module with a rate and rounding; `batch` adds the refactor's batch helper."""
    text = f'''"""{s.fee.capitalize()}s: the {s.house} pays out gross takings minus its {s.fee}."""

from decimal import {mode}, Decimal

from {s.package}.journal import Journal

CENT = Decimal("0.01")
FEE_BPS = {bps}
FEE_ROUNDING = {mode}
CLEARING = "clearing"
INCOME = "{s.income}"


def {s.func}(gross) -> Decimal:
    """The {s.fee} withheld from a payout of `gross`."""
    gross = Decimal(str(gross))
    return (gross * FEE_BPS / Decimal(10_000)).quantize(CENT, rounding=FEE_ROUNDING)


def {s.post}(journal: Journal, {s.payee}: str, gross) -> Decimal:
    """Post one payout: clearing gives gross, the {s.payee} gets the net, income the {s.fee}."""
    gross = Decimal(str(gross))
    withheld = {s.func}(gross)
    journal.post(f"payout {{{s.payee}}}", [(CLEARING, -gross), ({s.payee}, gross - withheld), (INCOME, withheld)])
    return withheld
'''
    if batch:
        text += f'''

def {s.post}_batch(journal: Journal, payouts) -> Decimal:
    """Post several (account, gross) payouts; the total {s.fee} withheld."""
    return sum(({s.post}(journal, who, gross) for who, gross in payouts), start=Decimal("0.00"))
'''
    return text


def journal_module() -> str:
    """The journal (unchanged by the bug)."""
    return '''"""A double-entry journal: every entry is a list of legs that sum to zero."""

from dataclasses import dataclass, field
from decimal import Decimal


class UnbalancedEntry(ValueError):
    """Raised when the legs of an entry do not sum to zero."""


@dataclass
class Journal:
    """Balances per account (credits positive) and the posted entries."""

    balances: dict = field(default_factory=dict)
    entries: list = field(default_factory=list)

    def post(self, memo: str, legs) -> None:
        """Post (account, amount) legs; they must balance."""
        legs = [(account, Decimal(amount)) for account, amount in legs]
        if sum(amount for _, amount in legs) != 0:
            raise UnbalancedEntry(f"entry {memo!r} does not balance")
        for account, amount in legs:
            self.balances[account] = self.balances.get(account, Decimal("0")) + amount
        self.entries.append((memo, legs))

    def balance(self, account: str) -> Decimal:
        """The balance of one account (zero when never posted to)."""
        return self.balances.get(account, Decimal("0"))
'''


def tokens(s: Shape, bps: int, side: str) -> tuple[str, ...]:
    """Every spelling that would reveal the rate or the rounding side."""
    rate = (str(bps), f"{bps / 100:.2f}", f"{bps / 10_000:.4f}", f"{bps / 100:.2f}".replace(".", ","))
    if side == "up":
        rule = ("rounded up", "round up", "rounds up", "round_up", "round_ceiling", "ceiling",
                f"{s.payee} absorbs", f"{s.payee}s absorb")
    else:
        rule = ("rounded down", "round down", "rounds down", "round_down", "round_floor", "truncated",
                "truncate", f"{s.house} absorbs")
    return rate + rule


def tell(variant: int, rule: tuple[int, str]) -> Story:
    """The story of one variant whose (rate in bps, rounding) is `rule`."""
    s = SHAPES[variant]
    bps, side = rule
    mode = MODES[side]
    absorber = s.payee if side == "up" else s.house
    pkg = s.package
    rate_pct = f"{bps / 100:.2f}%"
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.journal import Journal, UnbalancedEntry
from {pkg}.{s.module} import {s.post}


def test_unbalanced_entry_is_rejected():
    with pytest.raises(UnbalancedEntry):
        Journal().post("bad", [("a", Decimal("1.00")), ("b", Decimal("-0.99"))])


def test_balances_start_at_zero():
    assert Journal().balance("nobody") == 0


def test_payout_entry_balances():
    journal = Journal()
    {s.post}(journal, "acme", Decimal("250.00"))
    memo, legs = journal.entries[0]
    assert sum(amount for _, amount in legs) == 0
    assert journal.balance("clearing") == Decimal("-250.00")
'''
    repro = f'''from decimal import Decimal

from {pkg}.journal import Journal
from {pkg}.{s.module} import {s.func}, {s.post}


def test_{s.fee.replace(" ", "_")}_is_not_excessive():
    # Reported: a payout of 1000.00 had a {s.fee} far above the contract price.
    assert {s.func}(Decimal("1000.00")) < Decimal("{s.bound}")


def test_{s.payee}_receives_the_net():
    journal = Journal()
    withheld = {s.post}(journal, "acme", Decimal("1000.00"))
    assert journal.balance("acme") == Decimal("1000.00") - withheld
    assert journal.balance("acme") > Decimal("1000.00") - Decimal("{s.bound}")
'''
    exact = fee(Decimal("1000.00"), bps, mode)
    # A fixed sweep of gross amounts: fractional cents fall both ways, whatever the rate.
    amounts = [Decimal(n) / 100 for n in range(2001, 90000, 1237)]
    batch = [(f"p{n}", Decimal(n) / 100) for n in range(2001, 90000, 4999)]
    hidden = f'''from decimal import Decimal

from {pkg}.journal import Journal
from {pkg}.{s.module} import {s.func}, {s.post}, {s.post}_batch


def cents(amount):
    return int(amount * 100)


def test_hidden_contract_rate():
    assert {s.func}(Decimal("1000.00")) == Decimal("{exact}")


def test_hidden_fees_in_cents_over_amounts():
    amounts = [Decimal(n) / 100 for n in range(2001, 90000, 1237)]
    assert [cents({s.func}(a)) for a in amounts] == {[int(fee(a, bps, mode) * 100) for a in amounts]!r}


def test_hidden_ledger_after_payouts():
    journal = Journal()
    for n in range(2001, 90000, 4999):
        {s.post}(journal, f"p{{n}}", Decimal(n) / 100)
    assert cents(journal.balance("{s.income}")) == {int(sum(fee(g, bps, mode) for _, g in batch) * 100)}


def test_hidden_batch_total():
    journal = Journal()
    total = {s.post}_batch(journal, [("a", Decimal("1000.00")), ("b", Decimal("123.45"))])
    assert cents(total) == {int((exact + fee(Decimal("123.45"), bps, mode)) * 100)}
'''
    verb = "rounded up" if side == "up" else "rounded down"
    return Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        **rule_versions(lambda rate, later: rule_module(s, *rate, batch=later), (bps, mode),
                        (s.head_bps, "ROUND_HALF_UP"), (s.conv_bps, "ROUND_HALF_UP")),
        base_files=package_files(pkg, f"{s.project}: a double-entry ledger for payouts.", f"# {s.project}\n\n"
                                 f"Double-entry bookkeeping for {s.payee} payouts.\n",
                                 {f"{pkg}/journal.py": journal_module(),
                                  "tests/test_journal.py": base_tests}),
        repro_tests={"tests/test_repro_fee.py": repro},
        hidden_tests={"tests/test_hidden_fee.py": hidden},
        filler=[Commit("journal: document the sign convention", {
            f"{pkg}/__init__.py": f'"""{s.project}: a double-entry ledger for payouts (credits are positive)."""\n'})],
        fact_tokens=tokens(s, bps, side),
        tags=("money", "double-entry", "multi-part-rule"),
        project=s.project,
        **prose(f"""
        -- statement
        {s.payee.capitalize()}s are complaining about their statements: on a 1000.00 payout the {s.fee} we
        withheld is far more than their contract says, and finance cannot reconcile the {s.income} account.
        tests/test_repro_fee.py shows it. Please fix the payout posting.
        -- fact
        The {s.fee} is {bps} bps of gross, rounded {side} to the cent (the {absorber} absorbs the fractional
        cent).
        -- conventional_guess
        FEE_BPS = {s.conv_bps} with ROUND_HALF_UP
        -- intro_msg_fact
        {s.module}: withhold the {s.fee} on payouts

        The contract {s.fee} is {bps} bps of gross, {verb} to the cent: the {absorber} absorbs the fractional
        cent.
        -- intro_msg_plain
        {s.module}: withhold the {s.fee} on payouts
        -- refactor_msg
        {s.module}: add batch posting; consolidate fee settings
        -- K docs/CONVENTIONS.md
        - Payouts: the {s.house} withholds a {s.fee} of {bps} basis points ({rate_pct}) of gross.
        The {s.fee} is {verb} to the cent, so the {absorber} absorbs the fractional cent.
        -- F
        - (review of #233, finance) The {s.fee} is {bps} bps, not a round rate, and it is always {verb} to the
        cent ({mode}): the {absorber} absorbs the remainder. Please keep it that way.
        -- X
        ## Refund ledger disagreed with the contract statement
        Symptom: refunds reversed a different {s.fee} than the statement showed. Fix: refunds.py now
        withholds {bps} bps {verb} to the cent ({mode}), exactly like payouts; the {absorber} absorbs the
        fractional cent.
        -- docs/adr/0003-{s.fee.replace(' ', '-')}.md
        # ADR-0003: {s.fee.capitalize()} rate

        Status: Superseded

        The {s.fee} was {s.conv_bps} bps of gross, rounded half-up to the cent. Superseded by the current
        contract; kept for the audit trail only.
        -- docs/adr/0004-chargebacks.md
        # ADR-0004: Chargebacks

        Status: Accepted

        Chargebacks are posted as a reversal of the original payout and a flat dispute charge billed monthly,
        never withheld from payouts.
        -- docs/CONVENTIONS.md
        - Ledger: every journal entry balances to zero; amounts are Decimals with two places.
        -- docs/CONVENTIONS.md
        - Account names are snake_case; the clearing account is `clearing`.
        -- .agent/preferences.md
        - (review of #140) Never post a negative payout; reverse the original entry instead.
        -- .agent/preferences.md
        - (review of #158) Memos name the counterparty, not the internal id.
        -- .agent/past_fixes.md
        ## Duplicate payouts on retry
        Symptom: a retried webhook posted a payout twice. Fix: entries carry an idempotency key and the
        journal skips a key it has seen.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the contract fee rate in basis points and which side of a "
                   "payout absorbs the fractional cent (two-part rule)", variants=(0, 1), draw=fact_of,
                   tell=tell, space=SPACE)
