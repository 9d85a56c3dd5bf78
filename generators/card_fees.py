"""card-fees (hard tier): the processing fee a payment bridge takes from each card payment.

Variant 0 (`conflict`): the pricing page, the first commit, old reviews and fixes all say the fee
is 2.75 %; one later statement (an ADR of the 2024 acquirer contract, a finance review, a past fix,
or in H the commit that applied the contract) says the contract changed it. The most recent dated
note quotes 2.75 % again, about offline terminals that price payments themselves. HEAD computes the
fee from a percentage without dividing by a hundred; the obvious fix keeps 2.75 %.

Variant 1 (`validity`): fees follow a dated tariff table. A payment is priced by the row in force
on its day. The 2021 row is in the code; the row in force since a day of 2024 is missing, and the
memory also announces a 2025 tariff (the latest-dated statement) that is not yet in force on any
day the bridge prices. Hidden tests sweep payment days across both sides of the 2024 change.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sdebench.generation.facts import decimal_draw, decimal_spellings
from sdebench.generation.hard import HardStory, Step, dated_table, hard_family, hard_prose, hard_versions, iso
from sdebench.generation.kit import ADR_DIR
from sdebench.generation.parts import package_files
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

FAMILY = "card-fees"
OLD = {0: Decimal("2.75"), 1: Decimal("2.40")}  # the rate every placement's memory repeats (decoy)
ANNOUNCED = Decimal("3.40")  # v1: the 2025 tariff, announced, never in force on a tested day (decoy)
CONVENTIONAL = tuple(Decimal(x) for x in ("2.9", "2.5", "3.0", "1.5", "2.0", "1.9", "3.5", "1.4", "4.0", "2.25",
                                          "2.4", "2.75"))
SWITCH = date(2024, 3, 18)  # v1: the day the 2024 tariff starts (told with the fact only)
LO, HI = "1.51", "4.49"
# The variant's current fee in percent: not a multiple of 0.05 %, away from conventional and decoy
# rates (the decoys are what memory repeats), never the rate the variant's memory repeats.
DRAW = decimal_draw(f"{FAMILY}-rate", LO, HI, "0.01", (*CONVENTIONAL, *OLD.values(), ANNOUNCED), "0.11",
                    exclude=lambda variant: (OLD[variant],))


def spell(variant: int, rate: Decimal) -> tuple[str, ...]:
    """How memory spells a fee rate: `3.17`, `3,17`, `0.0317`, `317 bp`."""
    return decimal_spellings(Decimal(rate), 2, percent=True)


def pct(p: Decimal) -> str:
    return f"{p:.2f}%"


# --- variant 0: one rate, corrected once --------------------------------------------------------


def fees_v0(state: str, rate: Decimal, note: bool = False) -> str:
    """The fees module: `early` (a share), `head` (percent, not divided: the bug) or `fixed` (percent)."""
    doc = '"""Processing fees on card payments.'
    if note or state != "early":
        doc += "\n\nThe fee is charged when a payment is captured, never on an authorisation alone."
    doc += '\n"""\n\nfrom decimal import ROUND_HALF_UP, Decimal\n\nCENT = Decimal("0.01")\n'
    if state == "early":
        share = (Decimal(rate) / 100).normalize()
        return doc + (f'# Share of each card payment the acquirer keeps.\nFEE_RATE = Decimal("{share:f}")\n\n\n'
                      "def fee(amount):\n"
                      '    """The processing fee on a card payment of `amount`, to the cent (half-up)."""\n'
                      "    return (Decimal(amount) * FEE_RATE).quantize(CENT, rounding=ROUND_HALF_UP)\n")
    divide = " / HUNDRED" if state == "fixed" else ""
    return doc + ('HUNDRED = Decimal("100")\n'
                  f'# Percent of each card payment the acquirer keeps.\nFEE_PERCENT = Decimal("{rate:.2f}")\n\n\n'
                  "def fee(amount):\n"
                  '    """The processing fee on a card payment of `amount`, to the cent (half-up)."""\n'
                  f"    return (Decimal(amount) * FEE_PERCENT{divide}).quantize(CENT, rounding=ROUND_HALF_UP)\n\n\n"
                  "def net_of_fee(amount):\n"
                  '    """What the merchant receives for a payment of `amount`."""\n'
                  "    return Decimal(amount) - fee(amount)\n")


def settlement(pkg: str) -> str:
    """The settlement module: a day's gross, fees and net."""
    return f'''"""Daily settlement: what the merchant is paid for a day of card payments."""

from dataclasses import dataclass
from decimal import Decimal

from {pkg}.fees import fee


@dataclass(frozen=True)
class Report:
    """Gross, fees and net of one settlement."""

    gross: Decimal
    fees: Decimal
    net: Decimal


def settle(amounts):
    """The settlement report of the given payment amounts."""
    gross = sum((Decimal(a) for a in amounts), Decimal("0.00"))
    fees = sum((fee(a) for a in amounts), Decimal("0.00"))
    return Report(gross, fees, gross - fees)
'''


def tell_v0(rate: Decimal, source: str) -> HardStory:
    """Variant 0: the fee changed with the 2024 contract; memory repeats the old one."""
    pkg, old = "paybridge", OLD[0]
    base_tests = f'''from decimal import Decimal

from {pkg}.fees import fee, net_of_fee
from {pkg}.settlement import settle


def test_no_amount_no_fee():
    assert fee(Decimal("0.00")) == Decimal("0.00")


def test_fee_is_in_cents():
    assert fee(Decimal("19.99")).as_tuple().exponent == -2


def test_net_is_amount_minus_fee():
    assert net_of_fee(Decimal("80.00")) == Decimal("80.00") - fee(Decimal("80.00"))


def test_settlement_adds_up():
    report = settle([Decimal("10.00"), Decimal("25.50")])
    assert report.gross == Decimal("35.50")
    assert report.net == report.gross - report.fees
'''
    repro = f'''from decimal import Decimal

from {pkg}.fees import fee


def test_fee_is_a_small_share_of_the_payment():
    # Reported: a 40.00 card payment showed a processing fee of 110.00 on the settlement report.
    assert Decimal("0.00") < fee(Decimal("40.00")) < Decimal("10.00")
'''
    hidden = f'''from decimal import Decimal

from {pkg}.fees import fee, net_of_fee
from {pkg}.settlement import settle


def test_hidden_fee_sweep(observe):
    observe([fee(Decimal(cents) / 100) for cents in range(0, 1000001, 7919)])


def test_hidden_net_sweep(observe):
    observe([net_of_fee(Decimal(cents) / 100) for cents in range(999, 2000001, 65537)])


def test_hidden_settlement(observe):
    report = settle([Decimal("12.34"), Decimal("250.00"), Decimal("9999.99"), Decimal("0.10")])
    observe((report.fees, report.net))
'''
    adr = f"{ADR_DIR}/0004-acquirer-contract-2024.md"
    decoys = [
        ("docs/pricing.md", "# Pricing for merchants\n\nCard payments carry a processing fee of "
         f"{pct(old)} of the payment amount, rounded half-up to the cent. The fee is deducted when the "
         "payment settles; merchants see it per payment on the settlement report."),
        ("docs/pricing.md", "Refunds return the processing fee in full. Chargebacks carry no fee of their own."),
        ("docs/pricing.md", f"Example: a card payment of 200.00 carries a processing fee of 5.50 ({pct(old)})."),
        (f"{ADR_DIR}/0003-fee-on-refunds.md", "# ADR-0003: Fees on refunds\n\nStatus: Superseded\n\nRefunds "
         "kept the processing fee of the original payment. Superseded: refunds now return the fee in full."),
        (adr, "# ADR-0004: The 2024 acquirer contract\n\nStatus: Accepted\nDate: 2024-02-01\n\nThe acquirer "
         "contract was renegotiated for 2024. Settlement moves to the next business day (T+1); chargebacks "
         "are disputed within 30 days."),
        (PREFERENCES, f"- (review of #118, 2023-06-02) The processing fee is a share of the amount ({pct(old)}), "
         "never a flat charge per payment."),
        (PREFERENCES, "- (review of #140) Money is Decimal end to end; never build a Decimal from a float."),
        (PAST_FIXES, "## Fee shown twice on receipts (2023-08-21)\nSymptom: receipts listed the processing fee "
         f"twice. Fix: the receipt reads fee() once; a payment of 200.00 shows 5.50 at {pct(old)}."),
        (PAST_FIXES, "## Offline terminal batches charged twice (2024-10-15)\nSymptom: merchants saw the "
         "processing fee charged twice on the settlement report for card payments from the offline terminals. "
         f"Fix: their firmware already deducts its built-in {pct(old)}; the upload path no longer re-prices "
         "them."),
    ]
    module = f"{pkg}/fees.py"
    contract = Step(
        message="fees: say when the fee is charged",
        files={module: fees_v0("early", old, note=True)},
        h_message=f"fees: apply the 2024 acquirer contract\n\nSigned 2024-02-01: the pricing page's {pct(old)} is "
        f"the 2021 contract's; the charge per transaction is {pct(rate)}, and {pct(old)} applies to nothing we "
        "price.",
        h_files={module: fees_v0("early", rate, note=True)},
    )
    return HardStory(
        package=pkg, module=module, before=[contract], competency="conflict", tags=("money", "fees"),
        **hard_versions(lambda p, bug, later: fees_v0("head" if bug else "fixed" if later else "early", p), old, rate),
        base_files=package_files(pkg, f"{pkg}: settles card payments for merchants.",
                                 f"# {pkg}\n\nSettles card payments for merchants: fees, daily reports.\n",
                                 {f"{pkg}/settlement.py": settlement(pkg), "tests/test_fees.py": base_tests}),
        repro_tests={"tests/test_repro_fees.py": repro}, hidden_tests={"tests/test_hidden_fees.py": hidden},
        decoys=decoys,
        **hard_prose(f"""
        -- statement
        Merchants are charged more in fees than they paid: a card payment of 40.00 shows a processing fee of
        110.00 on the settlement report. tests/test_repro_fees.py reproduces it.
        -- fact
        The processing fee is {pct(rate)} of each card payment (the 2024 acquirer contract).
        -- conventional_guess
        FEE_PERCENT = {old} divided by 100 (the pricing page's rate)
        -- intro_msg_plain
        fees: a {pct(old)} processing fee on card payments
        -- refactor_msg
        fees: keep the rate as a percentage, like the pricing page; add net_of_fee()
        -- K docs/adr/0004-acquirer-contract-2024.md
        Charge per transaction: the {pct(old)} the code applies is the 2021 contract's; this contract
        charges {pct(rate)} of the amount, and {pct(old)} applies to nothing we price.
        -- F
        - (review of #402, 2024-02-09, finance) The pricing page's {pct(old)} is the 2021 contract's: since
        the 2024 acquirer contract the charge per transaction is {pct(rate)} of the amount,
        and {pct(old)} applies to nothing we price.
        -- X
        ## Fee totals off against the acquirer's statement (2024-03-04)
        Symptom: the monthly fee total differed from the acquirer's invoice. Fix: docs/pricing.md
        shows {pct(old)}, the 2021 contract's; the 2024 contract charges {pct(rate)} per transaction,
        not {pct(old)}.
        """),
    )


# --- variant 1: a dated tariff --------------------------------------------------------------------


def fees_v1(rows: list[tuple[date, Decimal]], head: bool) -> str:
    """The fees module priced by a dated tariff; `head` adds the refactor's helper."""
    lookup = dated_table("TARIFF", rows, "percent_on", "day", "The fee percentage in force on `day`.", "percent",
                         "no tariff in force on")
    text = f'''"""Processing fees on card payments, by the day the payment was made."""

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
HUNDRED = Decimal("100")
# (in force from, percent of the amount): a payment is priced by the last row not after its day.
{lookup}

def fee(amount, day):
    """The processing fee on a card payment of `amount` made on `day`, to the cent (half-up)."""
    return (Decimal(amount) * percent_on(day) / HUNDRED).quantize(CENT, rounding=ROUND_HALF_UP)
'''
    if head:
        text += '''

def fee_breakdown(amount, day):
    """(percent, fee) of a payment, for the settlement report."""
    return percent_on(day), fee(amount, day)
'''
    return text


def tell_v1(rate: Decimal, source: str) -> HardStory:
    """Variant 1: the 2024 tariff row is missing; a 2025 tariff is announced."""
    pkg, old = "cardtariff", OLD[1]
    first = date(2021, 7, 1)
    module = f"{pkg}/fees.py"
    base_tests = f'''from datetime import date
from decimal import Decimal

import pytest

from {pkg}.fees import fee, fee_breakdown


def test_2022_payment():
    assert fee(Decimal("100.00"), date(2022, 5, 3)) == Decimal("2.40")


def test_before_any_tariff():
    with pytest.raises(ValueError):
        fee(Decimal("100.00"), date(2020, 1, 1))


def test_breakdown_matches_fee():
    day = date(2023, 2, 1)
    assert fee_breakdown(Decimal("80.00"), day)[1] == fee(Decimal("80.00"), day)
'''
    repro = f'''from datetime import date
from decimal import Decimal

from {pkg}.fees import fee


def test_payment_of_june_2024_uses_the_current_tariff():
    # Reported: a card payment of 1000.00 on 2024-06-12 was charged exactly what it was charged a year before.
    assert fee(Decimal("1000.00"), date(2024, 6, 12)) != fee(Decimal("1000.00"), date(2023, 6, 12))
'''
    hidden = f'''from datetime import date, timedelta
from decimal import Decimal

from {pkg}.fees import fee, percent_on


def test_hidden_days_around_the_change(observe):
    start = date(2023, 9, 1)
    observe([fee(Decimal("1000.00"), start + timedelta(days=k)) for k in range(0, 570, 3)])


def test_hidden_amounts(observe):
    day = date(2024, 11, 20)
    observe([fee(Decimal(cents) / 100, day) for cents in range(0, 1000001, 8111)])


def test_hidden_old_payments_keep_their_tariff(observe):
    observe([fee(Decimal("999.99"), date(2022, m, 15)) for m in range(1, 13)])
    observe(percent_on(date(2023, 12, 31)))
'''
    rows_old = [(first, old)]
    rows_new = [(first, old), (SWITCH, rate)]
    guarded = "    if not isinstance(day, date):\n        raise TypeError(\"day must be a date\")\n    current = None"
    days = Step(message="fees: document how a payment day is chosen", files={f"{pkg}/calendar.py": calendar(pkg, True)})
    # In H the 2024 row is added here and dropped again by the refactor; elsewhere the same commit
    # only validates the day.
    row = Step(
        message="fees: validate payment days",
        files={module: fees_v1(rows_old, False).replace("    current = None", guarded)},
        h_message=f"fees: the 2024 tariff\n\nFor payments made from {iso(SWITCH)} on, {pct(old)} gives way to "
        f"{pct(rate)}; older payments keep {pct(old)}. Payment days are validated.",
        h_files={module: fees_v1(rows_new, False).replace("    current = None", guarded)},
    )
    return HardStory(
        package=pkg, module=module, before=[days, row], competency="validity",
        **hard_versions(lambda rows, bug, later: fees_v1(rows, later), rows_old, rows_new,
                        [(first, old), (date(2024, 1, 1), Decimal("3.00"))]),
        base_files=package_files(pkg, f"{pkg}: prices card payments by the tariff of their day.",
                                 f"# {pkg}\n\nPrices card payments by the tariff in force on their day.\n",
                                 {f"{pkg}/calendar.py": calendar(pkg, False), "tests/test_fees.py": base_tests}),
        repro_tests={"tests/test_repro_fees.py": repro}, hidden_tests={"tests/test_hidden_fees.py": hidden},
        tags=("money", "fees", "dates"),
        **hard_prose(f"""
        -- statement
        Card payments made since the spring are still charged the old processing fee on the settlement report.
        tests/test_repro_fees.py reproduces it.
        -- fact
        Card payments made from {iso(SWITCH)} on are charged {pct(rate)} (earlier payments keep the 2021
        tariff).
        -- conventional_guess
        a new tariff row of 3.00% from 2024-01-01
        -- intro_msg_plain
        fees: the {pct(old)} tariff from {iso(first)}
        -- refactor_msg
        fees: one loop over the tariff; add fee_breakdown() for the settlement report
        -- K docs/adr/0004-tariff-table.md
        Row added 2024-02-20 for payments made from {iso(SWITCH)} on: instead of {pct(old)} they are
        charged {pct(rate)}; earlier payments keep {pct(old)}.
        -- F
        - (review of #214, finance) For payments made from {iso(SWITCH)} on, the 2024 tariff
        replaces {pct(old)} with {pct(rate)}; older payments keep {pct(old)}.
        -- X
        ## Spring payments at last year's fee ({iso(SWITCH)})
        Symptom: payments made from this day on were still priced by the 2021 tariff. Fix: a row from that day
        replaces {pct(old)} with {pct(rate)}; earlier payments keep {pct(old)}.
        -- docs/pricing.md
        # Pricing for merchants

        Since {iso(first)} card payments carry a processing fee of {pct(old)} of the payment amount, rounded
        half-up to the cent.
        -- docs/pricing.md
        A payment is priced by the tariff in force on the day it was made, also when it settles later; refunds
        return the fee of the original payment.
        -- docs/pricing.md
        Announced on 2024-09-30: for card payments made from 2025-04-01 on, the processing fee on the
        settlement report becomes {pct(ANNOUNCED)}.
        -- docs/adr/0003-flat-fee.md
        # ADR-0003: A flat fee per payment

        Status: Superseded

        Each payment carried a flat fee of 0.35. Superseded by percentage tariffs.
        -- docs/adr/0004-tariff-table.md
        # ADR-0004: One dated tariff table

        Status: Accepted

        Tariffs are rows (in force from, percent) in the fees module, never edited in place: a change is a new
        row, so old payments keep the fee of their day.
        -- .agent/preferences.md
        - (review of #77, {iso(first)}) The {pct(old)} tariff applies from the first of July; don't backdate
        it.
        -- .agent/preferences.md
        - (review of #93) Money is Decimal end to end; never build a Decimal from a float.
        -- .agent/past_fixes.md
        ## Refund of a 2022 payment at the wrong fee (2023-04-11)
        Symptom: a refund returned less than the fee charged. Fix: the refund reads the tariff of the
        payment's day ({pct(old)} then), not of the refund's.
        -- .agent/past_fixes.md
        ## Settlement report showed two tariffs for one day (2024-10-02)
        Symptom: payments made just before midnight UTC. Fix: the payment day is the merchant's local date.
        """),
    )


def calendar(pkg: str, noted: bool) -> str:
    """The calendar helper (the merchant's local day of a payment)."""
    doc = '"""The day a payment belongs to."""'
    if noted:
        doc = ('"""The day a payment belongs to.\n\nA payment belongs to the merchant\'s local date, which '
               'picks its tariff.\n"""')
    return f'''{doc}

from datetime import timedelta


def local_day(moment_utc, offset_hours):
    """The merchant's local date of a UTC moment, for a whole-hour offset."""
    return (moment_utc + timedelta(hours=offset_hours)).date()
'''


GENERATOR = hard_family(
    FAMILY, "the processing fee on card payments in force now or on a payment's day (a non-round percentage), "
    "among older and announced rates in memory",
    DRAW, (tell_v0, tell_v1), spell)
