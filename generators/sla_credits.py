"""sla-credits (hard tier): how much monthly downtime a hosting contract tolerates before credits start.

A customer is credited 10 % of the monthly fee per started hour of downtime beyond the allowance,
at most 50 %. Both variants share the bug the repro shows: the refactor caps the share with max()
(every month is credited half the fee) and drops the guard against a negative excess. What the fix
must also get right is the allowance, which only memory knows.

Variant 0 (`implicit`): the code tolerates 43 minutes (99.9 % of a 30-day month, the usual figure),
the bug report is about credits on every invoice, and nothing points anywhere. One statement (the contract
summary, a review, a past fix, or in H the commit that set it) gives the contract's allowance.

Variant 1 (`synthesis`): the allowance is the planned-maintenance window plus the unplanned
allowance, each stated in one item of the designated source; no item states the sum.
"""

from __future__ import annotations

from sdebench.generation.facts import integer_draw
from sdebench.generation.hard import HardStory, Step, hard_family, hard_prose, hard_versions

FAMILY = "sla-credits"
USUAL = 43  # 99.9 % of a 30-day month: what the code starts with (decoy)
PARTNER = 216  # 99.5 %: a partner's allowance, the latest-dated figure in v0 (decoy)
MAINTENANCE = 64  # v1: the planned-maintenance window (a part of the fact)
CONVENTIONAL = (43, 44, 216, 22, 60, 90, 120, 240, 432, 180, 30, 45, 100, 150, 200, 300)
LO, HI = 121, 399


def drawable(n: int) -> bool:
    """An allowance the draw may return: not a multiple of 5, away from usual ones, and so is its
    unplanned part (v1 tells it as maintenance window plus that part)."""
    rest = n - MAINTENANCE
    return (n % 5 != 0 and all(abs(n - c) > 3 for c in CONVENTIONAL) and rest % 5 != 0
            and all(abs(rest - c) > 3 for c in CONVENTIONAL) and rest != MAINTENANCE)


# v0: the contract's allowance; v1: maintenance window plus unplanned allowance.
DRAW = integer_draw(f"{FAMILY}-minutes", LO, HI, CONVENTIONAL, drawable)


def spell(variant: int, n: int) -> tuple[str, ...]:
    """How memory spells an allowance: `131 minutes`, `131 min`, `131-minute`, `131min`."""
    return (f"{n} minutes", f"{n} min", f"{n}-minute", f"{n}min", f"{n} mins")


def credits(allowance: int, *, guard: bool, helper: bool, comment: str = "99.9 % of a 30-day month",
            noted: bool = False, cap: str = "min") -> str:
    """The credits module."""
    check = "    if excess <= 0:\n        return Decimal(\"0.00\")\n" if guard else ""
    doc = '"""Service credits for downtime beyond the contract\'s monthly allowance."""'
    if noted:
        doc = ('"""Service credits for downtime beyond the contract\'s monthly allowance.\n\nDowntime is '
               'counted in whole minutes from the monitor\'s incident log.\n"""')
    text = f'''{doc}

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
# Minutes of downtime a month tolerated before any credit ({comment}).
ALLOWED_DOWNTIME_MINUTES = {allowance}
CREDIT_PER_HOUR = Decimal("0.10")
MAX_CREDIT = Decimal("0.50")


def credit(monthly_fee, downtime_minutes):
    """The credit for a month with `downtime_minutes` of downtime: 10 % of the fee per started hour
    beyond the allowance, at most half the fee."""
    excess = downtime_minutes - ALLOWED_DOWNTIME_MINUTES
{check}    hours = -(-excess // 60)
    share = {cap}(CREDIT_PER_HOUR * hours, MAX_CREDIT)
    return (Decimal(monthly_fee) * share).quantize(CENT, rounding=ROUND_HALF_UP)
'''
    if helper:
        text += '''

def credit_note(monthly_fee, downtime_minutes):
    """The line printed on the invoice."""
    return f"downtime {downtime_minutes} min, credit {credit(monthly_fee, downtime_minutes)}"
'''
    return text


def invoice_module(pkg: str) -> str:
    """The invoice: fee minus credit."""
    return f'''"""Monthly invoices."""

from decimal import Decimal

from {pkg}.credits import credit


def amount_due(monthly_fee, downtime_minutes):
    """What the customer pays for a month: the fee minus the service credit."""
    return Decimal(monthly_fee) - credit(monthly_fee, downtime_minutes)
'''


def tests(pkg: str) -> tuple[str, str, str]:
    """The existing suite, the repro and the held-out tests."""
    base = f'''from decimal import Decimal

from {pkg}.credits import credit, credit_note
from {pkg}.invoice import amount_due


def test_credit_is_in_cents():
    assert credit(Decimal("19.99"), 5000).as_tuple().exponent == -2


def test_amount_due_is_fee_minus_credit():
    fee = Decimal("1000.00")
    assert amount_due(fee, 5000) == fee - credit(fee, 5000)


def test_note_shows_the_downtime():
    assert credit_note(Decimal("10.00"), 100000).startswith("downtime 100000 min")
'''
    repro = f'''from decimal import Decimal

from {pkg}.credits import credit


def test_no_downtime_no_credit():
    # Reported: a month without any downtime was credited half the monthly fee.
    assert credit(Decimal("1000.00"), 0) == Decimal("0.00")
'''
    hidden = f'''from decimal import Decimal

from {pkg}.credits import credit
from {pkg}.invoice import amount_due


def test_hidden_credit_by_downtime(observe):
    observe([credit(Decimal("1000.00"), m) for m in range(0, 700)])


def test_hidden_amount_due(observe):
    observe([amount_due(Decimal(24990) / 100, m) for m in range(0, 3000, 17)])
'''
    return base, repro, hidden


STATEMENT = ("Every invoice carries a service credit of half the monthly fee, even for months without any "
             "downtime. tests/test_repro_credits.py reproduces it.")


def base_files(pkg: str) -> dict[str, str]:
    base, _, _ = tests(pkg)
    return {
        f"{pkg}/__init__.py": f'"""{pkg}: invoices and service credits of a hosting contract."""\n',
        f"{pkg}/invoice.py": invoice_module(pkg),
        "tests/test_credits.py": base,
        "README.md": f"# {pkg}\n\nMonthly invoices and service credits of a hosting contract.\n",
    }


def mins(n: int) -> str:
    return f"{n} minutes"

# Decoys both variants carry: the contract's frame and a superseded decision, no figure.
CONTRACT = """
    -- docs/contract.md
    # The hosting contract

    The contract with our customers is renewed yearly; its schedule B sets the service levels.
    -- docs/adr/0003-credit-per-incident.md
    # ADR-0003: A credit per incident

    Status: Superseded

    Each incident earned a fixed credit. Superseded: credits are computed per month from total downtime.
    """


def tell_v0(n: int, source: str) -> HardStory:
    """Variant 0: the usual 43 minutes everywhere; the contract's allowance (the fact) stated once."""
    pkg = "uptimeledger"
    module = f"{pkg}/credits.py"
    _, repro, hidden = tests(pkg)
    schedule = Step(
        message="credits: say how downtime is counted",
        files={module: credits(USUAL, guard=True, helper=False, noted=True)},
        h_message=f"credits: schedule B's allowance\n\nSigned 2023-04-01: not the usual {mins(USUAL)}; schedule B "
        f"tolerates {mins(n)} of downtime a month, so an outage of just over {mins(USUAL)} earns no credit. "
        "Downtime is counted in whole minutes.",
        h_files={module: credits(n, guard=True, helper=False, noted=True, comment="schedule B of the contract")},
    )
    return HardStory(
        package=pkg, module=module, before=[schedule], competency="implicit",
        **hard_versions(lambda m, bug, later: credits(m, guard=not bug, helper=later, cap="max" if bug else "min"),
                        USUAL, n),
        base_files=base_files(pkg),
        repro_tests={"tests/test_repro_credits.py": repro},
        hidden_tests={"tests/test_hidden_credits.py": hidden},
        statement=STATEMENT,
        tags=("hosting", "sla", "money"),
        **hard_prose(f"""
        -- fact
        The contract tolerates {mins(n)} of downtime a month before credits start.
        -- conventional_guess
        cap the share with min() and guard the excess, keeping the usual {mins(USUAL)}
        -- intro_msg_plain
        credits: 10% per started hour beyond {mins(USUAL)} (99.9%)
        -- refactor_msg
        credits: compute the share in one expression; add credit_note() for invoices
        -- K docs/contract.md
        Schedule B, as signed 2023-04-01: not the usual {mins(USUAL)}; customers tolerate up to {mins(n)} of
        downtime a month before any credit is owed, so an outage of just over {mins(USUAL)} earns nothing.
        -- F
        - (review of #640, 2023-04-03, legal) Our contract is not the usual {mins(USUAL)}: schedule B
        tolerates {mins(n)} of downtime a month, and credits start after that, not after {mins(USUAL)}.
        -- X
        ## Credits paid that the contract did not owe (2023-05-02)
        Symptom: finance found credits paid for short outages. Fix: the threshold was the usual {mins(USUAL)};
        schedule B tolerates {mins(n)} a month, so an outage of just over {mins(USUAL)} earns nothing.
        -- docs/credits.md
        # Service credits

        A customer is credited 10% of the monthly fee per started hour of downtime beyond the allowance, at
        most half the fee. The allowance is {mins(USUAL)} a month, 99.9% of a 30-day month; the credit shows
        on the next invoice.
        -- docs/monitoring.md
        # Monitoring

        The external monitor probes every minute; an incident's downtime is counted in whole minutes from its
        first failed probe to its first good one.
        -- .agent/preferences.md
        - (review of #610, 2023-01-17) The usual 99.9% means {mins(USUAL)} a month; keep the constant in
        minutes, not as a percentage.
        -- .agent/preferences.md
        - (review of #625) Money is Decimal end to end; credits round half-up to the cent.
        -- .agent/past_fixes.md
        ## February credits too high (2023-03-06)
        Symptom: credits for February were larger than for March. Fix: the allowance is a fixed {mins(USUAL)},
        not a share of the month's length.
        -- .agent/past_fixes.md
        ## Partner outage credited twice (2024-08-19)
        Symptom: the partner's own SLA credit was added to ours. Fix: the partner's contract
        tolerates {mins(PARTNER)} and credits separately; ours ignores it.
        """, CONTRACT),
    )


def tell_v1(n: int, source: str) -> HardStory:
    """Variant 1: the allowance is the maintenance window plus the unplanned allowance, stated apart."""
    pkg = "slabook"
    module = f"{pkg}/credits.py"
    _, repro, hidden = tests(pkg)
    unplanned = n - MAINTENANCE
    both = (f"MAINTENANCE_MINUTES = {MAINTENANCE}\nUNPLANNED_MINUTES = {unplanned}\n"
            "ALLOWED_DOWNTIME_MINUTES = MAINTENANCE_MINUTES + UNPLANNED_MINUTES")
    signed = Step(
        message="credits: say how downtime is counted",
        files={module: credits(USUAL, guard=True, helper=False, noted=True)},
        h_message=f"credits: schedule B, {mins(MAINTENANCE)} of maintenance plus {mins(unplanned)} unplanned\n\n"
        "Signed 2023-04-01; downtime is counted in whole minutes.",
        h_files={module: credits(USUAL, guard=True, helper=False, noted=True, comment="schedule B").replace(
            f"ALLOWED_DOWNTIME_MINUTES = {USUAL}", both)},
    )
    return HardStory(
        package=pkg, module=module, before=[signed], competency="synthesis", tags=("hosting", "sla", "money"),
        early=credits(USUAL, guard=True, helper=False),
        head_buggy=credits(USUAL, guard=False, helper=True, cap="max"),
        oracle=credits(n, guard=True, helper=True, comment="schedule B"),
        conventional=credits(USUAL, guard=True, helper=True),
        base_files=base_files(pkg),
        repro_tests={"tests/test_repro_credits.py": repro},
        hidden_tests={"tests/test_hidden_credits.py": hidden},
        statement=STATEMENT,
        fact_tokens=(*spell(1, n), *spell(1, MAINTENANCE), *spell(1, unplanned)),
        **hard_prose(f"""
        -- fact
        Customers tolerate {mins(n)} of downtime a month (the maintenance window plus the unplanned allowance)
        before credits start.
        -- conventional_guess
        cap the share with min() and guard the excess, keeping the usual {mins(USUAL)}
        -- intro_msg_plain
        credits: 10% per started hour beyond {mins(USUAL)} (99.9%)
        -- refactor_msg
        credits: one allowance constant, the share in one expression; add credit_note()
        -- K docs/maintenance.md
        The planned-maintenance window is {mins(MAINTENANCE)} a month; downtime inside it never earns a
        credit.
        -- K docs/contract.md
        Schedule B, as signed 2023-04-01: on top of the maintenance window, customers
        tolerate {mins(unplanned)} of unplanned downtime a month.
        -- F
        - (review of #741, 2023-04-03, operations) The maintenance window is {mins(MAINTENANCE)} a month and
        is part of what customers tolerate.
        -- F
        - (review of #752, 2023-04-05, legal) Schedule B tolerates {mins(unplanned)} of unplanned downtime a
        month, besides the maintenance window.
        -- X
        ## Credits for announced maintenance (2023-04-27)
        Symptom: Sunday maintenance earned credits. Fix: the {mins(MAINTENANCE)} maintenance window a month is
        tolerated on top of the unplanned allowance.
        -- X
        ## Credits paid that the contract did not owe (2023-05-02)
        Symptom: finance found credits paid for short outages. Fix: schedule B tolerates {mins(unplanned)} of
        unplanned downtime a month, besides the maintenance window.
        -- docs/credits.md
        # Service credits

        A customer is credited 10% of the monthly fee per started hour of downtime beyond the month's
        allowance, at most half the fee; the credit shows on the next invoice. Planned maintenance inside its
        window does not count against customers.
        -- docs/maintenance.md
        # Planned maintenance

        Maintenance is announced a week ahead and runs on Sunday nights.
        -- .agent/preferences.md
        - (review of #710, 2022-09-05) Start from the usual {mins(USUAL)} (99.9%) until legal sends the signed
        schedule.
        -- .agent/preferences.md
        - (review of #725) Money is Decimal end to end; credits round half-up to the cent.
        -- .agent/past_fixes.md
        ## February credits too high (2022-11-03)
        Symptom: credits for February were larger than for March. Fix: the allowance is a fixed number of
        minutes ({mins(USUAL)} then), not a share of the month.
        -- .agent/past_fixes.md
        ## Old invoices reprinted (2024-06-24)
        Symptom: reprints of 2022 invoices used today's allowance. Fix: a reprint uses its own month's
        allowance ({mins(USUAL)} back then).
        """, CONTRACT),
    )


GENERATOR = hard_family(
    FAMILY, "the minutes of downtime a month a hosting contract tolerates before service credits start: "
    "one figure nothing points to (v0) or the sum of two allowances stated apart (v1)",
    DRAW, (tell_v0, tell_v1), spell)
