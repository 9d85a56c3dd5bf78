"""parking-tariff (hard tier): what a garage barrier charges per started hour.

Both variants share the bug the repro shows: the refactor counts whole hours, so a stay of 61
minutes is charged as one hour. What the fix must also get right comes from memory only.

Variant 0 (`scope`): the tariff page, the first commit and every review say a started hour costs
3.20, and the latest note re-confirms it. One of the three garages belongs to the council, which sets
its own price: one statement, apart from the tariff (the sites page, a review, a past fix, or in H
the commit that added the site's price), gives it. Hidden tests charge stays at every site.

Variant 1 (`synthesis`): the code still charges the 2.90 of its first commit. The price posted at
the entrance is the operator's rate plus the council's parking levy, stated in two items of the
designated source; neither alone is the price, and no item states the sum.
"""

from __future__ import annotations

from decimal import Decimal

from sdebench.generation.facts import decimal_draw, decimal_spellings, far_from, non_round
from sdebench.generation.hard import HardStory, Step, hard_family, hard_prose, hard_versions
from sdebench.generation.parts import package_files

FAMILY = "parking-tariff"
HEADLINE = Decimal("3.20")  # v0: the price of a started hour at every site but one (decoy)
POSTED_2021 = Decimal("2.90")  # v1: the price the code was written with (decoy)
LEVY = Decimal("0.27")  # v1: the council's levy per started hour (a part of the fact)
# Round prices and the decoys of both variants (one space serves the family: its draw must suit both).
CONVENTIONAL = tuple(Decimal(x) for x in ("3.20", "2.90", "1.60", "3.00", "2.50", "2.00", "3.50", "4.00", "1.50",
                                          "2.95", "4.50", "2.40"))
LO, HI = "1.51", "4.49"


def drawable(price: Decimal) -> bool:
    """A price the draw may return: non-round, away from round and decoy prices, and so is the operator's
    part of it (v1 tells the price as that part plus the levy)."""
    base = price - LEVY
    return (non_round(price) and far_from(price, CONVENTIONAL, "0.03") and non_round(base)
            and far_from(base, CONVENTIONAL, "0.03"))


# v0: the riverside price of a started hour; v1: the posted price (operator's rate + levy).
DRAW = decimal_draw(f"{FAMILY}-price", LO, HI, "0.01", CONVENTIONAL, "0.11", accept=drawable)


def spell(variant: int, price: Decimal) -> tuple[str, ...]:
    """How memory spells a price: `1.37`, `1,37`, `1.37 EUR`."""
    return decimal_spellings(Decimal(price), 2, units=("EUR",))


def money(p: Decimal) -> str:
    return f"{p:.2f} EUR"


def barrier(rate: Decimal, *, floor: bool, helper: bool, riverside: Decimal | None = None,
            checked: bool = False) -> str:
    """The barrier's pricing module."""
    hours = "minutes // 60" if floor else "-(-minutes // 60)"
    text = f'''"""What the garage barrier charges for a stay."""

from decimal import Decimal

SITES = ("central", "station", "riverside")
GRACE_MINUTES = 10
HOURLY_RATE = Decimal("{rate:.2f}")
'''
    if riverside is not None:
        text += f'RIVERSIDE_HOURLY_RATE = Decimal("{riverside:.2f}")\n'
    text += f'''

def started_hours(minutes):
    """The hours begun during a stay of `minutes` (a started hour counts in full)."""
    return {hours}


def hourly_rate(site):
    """The price of one started hour at `site`."""
    if site not in SITES:
        raise ValueError(f"unknown site {{site!r}}{' (central, station or riverside)' if checked else ''}")
'''
    if riverside is not None:
        text += '    if site == "riverside":\n        return RIVERSIDE_HOURLY_RATE\n'
    text += '''    return HOURLY_RATE


def charge(minutes, site="central"):
    """The price of a stay of `minutes` at `site`; free within the grace period."""
    if minutes < 0:
        raise ValueError("a stay cannot be negative")
    if minutes <= GRACE_MINUTES:
        return Decimal("0.00")
    return hourly_rate(site) * started_hours(minutes)
'''
    if helper:
        text += '''

def receipt_line(minutes, site="central"):
    """The receipt's line: started hours and the total."""
    return f"{started_hours(minutes)} h  {charge(minutes, site)}"
'''
    return text


def tests(pkg: str) -> tuple[str, str, str]:
    """The existing suite, the repro and the held-out tests."""
    base = f'''from decimal import Decimal

import pytest

from {pkg}.barrier import charge, receipt_line


def test_grace_period_is_free():
    assert charge(10, "central") == Decimal("0.00")


def test_unknown_site():
    with pytest.raises(ValueError):
        charge(30, "harbour")


def test_negative_stay():
    with pytest.raises(ValueError):
        charge(-1)


def test_receipt_shows_the_total():
    assert receipt_line(30).endswith(str(charge(30)))
'''
    repro = f'''from {pkg}.barrier import charge


def test_a_started_hour_counts_in_full():
    # Reported: a car that stayed 61 minutes paid what a 60-minute stay pays.
    assert charge(60) < charge(61) == charge(120)
'''
    hidden = f'''from {pkg}.barrier import SITES, charge


def test_hidden_every_site_over_a_day(observe):
    observe({{v: [charge(m, v) for m in range(0, 1500, 13)] for v in SITES}})


def test_hidden_long_stays(observe):
    observe([charge(m, v) for v in SITES for m in (1441, 2890, 10079)])
'''
    return base, repro, hidden


STATEMENT = ("A car that stays 61 minutes is charged at the barrier as if it had stayed one hour, the same "
             "as a 60-minute stay: a started hour should count in full. tests/test_repro_barrier.py "
             "reproduces it.")


def tell_v0(price: Decimal, source: str) -> HardStory:
    """Variant 0: 3.20 at every site, except riverside (the fact), stated apart."""
    pkg, module = "garagepay", "garagepay/barrier.py"
    base, repro, hidden = tests(pkg)
    sites_step = Step(
        message="barrier: name the sites in the error",
        files={module: barrier(HEADLINE, floor=False, helper=False, checked=True)},
        h_message=f"barrier: the council's price at riverside\n\nDecision of 2023-04-12: riverside is not on the "
        f"company's {money(HEADLINE)}; the council sets {money(price)} per started hour there, and the other "
        f"sites keep {money(HEADLINE)}. The error names the sites.",
        h_files={module: barrier(HEADLINE, floor=False, helper=False, checked=True, riverside=price)},
    )
    return HardStory(
        package=pkg, module=module, before=[sites_step], competency="scope", tags=("money", "tariff"),
        **hard_versions(lambda site, bug, later: barrier(HEADLINE, floor=bug, helper=later, riverside=site), None,
                        price),
        base_files=package_files(pkg, f"{pkg}: prices stays at the garage barrier.",
                                 f"# {pkg}\n\nPrices stays at the garage barrier and prints receipts.\n",
                                 {"tests/test_barrier.py": base}),
        repro_tests={"tests/test_repro_barrier.py": repro},
        hidden_tests={"tests/test_hidden_barrier.py": hidden},
        statement=STATEMENT,
        **hard_prose(f"""
        -- fact
        Riverside charges {money(price)} per started hour; the other sites keep the company tariff.
        -- conventional_guess
        count started hours, {money(HEADLINE)} at every site
        -- intro_msg_plain
        barrier: {money(HEADLINE)} per started hour, 10 free minutes
        -- refactor_msg
        barrier: one hourly price for every site; add receipt_line()
        -- K docs/sites.md
        Decision of 2023-04-12: the company tariff of {money(HEADLINE)} does not apply at riverside, where the
        council's price is {money(price)} per started hour; central and station keep {money(HEADLINE)}. The
        grace period is the same everywhere.
        -- F
        - (review of #88, 2023-04-20) Riverside is not on the company's {money(HEADLINE)}: the council's price
        there is {money(price)} per started hour; the other sites keep {money(HEADLINE)}.
        -- X
        ## Riverside receipts disputed (2023-05-02)
        Symptom: the council's audit rejected our riverside receipts. Fix: since the council's decision of
        2023-04-12 riverside is not on the company's {money(HEADLINE)}; a started hour there
        costs {money(price)}, while the other sites keep {money(HEADLINE)}.
        -- docs/tariff.md
        # Garage tariff

        A stay is charged {money(HEADLINE)} per started hour at our garages; the first 10 minutes are free.
        The barrier prints the started hours and the total on the receipt.
        -- docs/tariff.md
        Lost tickets are charged as a full day: 24 started hours.
        -- docs/sites.md
        # Sites

        The barrier software runs at three garages: central, station and riverside. The riverside garage
        belongs to the council and is run by us under a management contract.
        -- docs/adr/0003-day-tickets.md
        # ADR-0003: Day tickets

        Status: Superseded

        A flat day ticket replaced hourly charges after six hours. Superseded: every stay is charged by the
        started hour.
        -- .agent/preferences.md
        - (review of #52, 2023-01-09) Charge by the started hour at {money(HEADLINE)}; never pro-rate minutes.
        -- .agent/preferences.md
        - (review of #301, 2024-09-02, operations) The council's yearly review kept {money(HEADLINE)} per
        started hour; don't touch the price in refactors.
        -- .agent/past_fixes.md
        ## Night stays charged twice (2023-07-30)
        Symptom: stays across midnight got two tickets. Fix: one stay, one charge, at {money(HEADLINE)} per
        started hour over the whole stay.
        -- .agent/past_fixes.md
        ## Receipt printer cut the total (2023-11-02)
        Symptom: totals over 100 lost a digit. Fix: the receipt line is right-aligned on 12 characters.
        """),
    )


def tell_v1(price: Decimal, source: str) -> HardStory:
    """Variant 1: the posted price is the operator's rate plus the levy, stated in two items."""
    pkg, module = "parkmeter", "parkmeter/barrier.py"
    base, repro, hidden = tests(pkg)
    operator = price - LEVY

    def module_with(rate_expr: str | None, checked: bool) -> str:
        text = barrier(POSTED_2021, floor=False, helper=False, checked=checked)
        if rate_expr is None:
            return text
        return text.replace(f'HOURLY_RATE = Decimal("{POSTED_2021:.2f}")', rate_expr)

    op_rate = f'OPERATOR_RATE = Decimal("{operator:.2f}")\nHOURLY_RATE = OPERATOR_RATE'
    both = f'OPERATOR_RATE = Decimal("{operator:.2f}")\nLEVY = Decimal("{LEVY:.2f}")\nHOURLY_RATE = OPERATOR_RATE + LEVY'
    contract = Step(
        message="barrier: name the sites in the error",
        files={module: module_with(None, True)},
        h_message=f"barrier: the operator's rate of {money(operator)} per started hour\n\nNew contract from "
        "2023-03-01; the error names the sites.",
        h_files={module: module_with(op_rate, True)},
    )
    levy = Step(
        message="barrier: keep the rate constants together",
        files={module: module_with(None, True).replace("GRACE_MINUTES = 10\n", "GRACE_MINUTES = 10  # minutes\n")},
        h_message=f"barrier: add the council levy of {money(LEVY)} per started hour",
        h_files={module: module_with(both, True).replace("GRACE_MINUTES = 10\n", "GRACE_MINUTES = 10  # minutes\n")},
    )
    return HardStory(
        package=pkg, module=module, before=[contract, levy], competency="synthesis", tags=("money", "tariff"),
        **hard_versions(lambda rate, bug, later: barrier(rate, floor=bug, helper=later), POSTED_2021, price),
        base_files=package_files(pkg, f"{pkg}: prices stays at the garage barrier.",
                                 f"# {pkg}\n\nPrices stays at the garage barrier and prints receipts.\n",
                                 {"tests/test_barrier.py": base}),
        repro_tests={"tests/test_repro_barrier.py": repro},
        hidden_tests={"tests/test_hidden_barrier.py": hidden},
        statement=STATEMENT.replace("reproduces it.", "reproduces it. Drivers also say the hourly price on the "
                                    "receipt is not the one posted at the entrance."),
        fact_tokens=(*spell(1, price), *spell(1, operator), *spell(1, LEVY)),
        **hard_prose(f"""
        -- fact
        A started hour costs {money(price)}: the operator's rate plus the council levy.
        -- conventional_guess
        count started hours at the code's {money(POSTED_2021)}
        -- intro_msg_plain
        barrier: {money(POSTED_2021)} per started hour, 10 free minutes
        -- refactor_msg
        barrier: one hourly price constant; add receipt_line()
        -- K docs/operator.md
        Since 2023-03-01 the operator's rate is {money(operator)} per started hour.
        -- K docs/levy.md
        The levy is {money(LEVY)} per started hour, collected on top of the operator's rate; the posted price
        includes it.
        -- F
        - (review of #118, 2023-03-02) The operator's rate under the new contract is {money(operator)} per
        started hour.
        -- F
        - (review of #131, 2023-05-10, finance) The council levy of {money(LEVY)} per started hour comes on
        top of the operator's rate; drivers pay both.
        -- X
        ## Operator invoice did not match (2023-04-03)
        Symptom: the operator's share was off. Fix: its rate is {money(operator)} per started hour since
        2023-03-01.
        -- X
        ## Council levy missing from receipts (2023-06-19)
        Symptom: the council's audit found the levy unpaid. Fix: every started hour carries the levy
        of {money(LEVY)} on top of the operator's rate.
        -- docs/tariff.md
        # Garage tariff

        A stay is charged per started hour; the first 10 minutes are free. The price per started hour is
        posted at the entrance and printed on every receipt.
        -- docs/levy.md
        # The council's parking levy

        The council collects a levy on every paid parking stay in the city centre; the operator remits it
        monthly.
        -- docs/operator.md
        # Operating contract

        The garage is run under a contract with the operator, renewed every two years; it sets the operator's
        rate.
        -- docs/adr/0003-day-tickets.md
        # ADR-0003: Day tickets

        Status: Superseded

        A flat day ticket replaced hourly charges after six hours. Superseded: every stay is charged by the
        started hour.
        -- .agent/preferences.md
        - (review of #61, 2022-11-14) Charge by the started hour; never pro-rate minutes.
        -- .agent/preferences.md
        - (review of #70, 2022-12-01) Keep {money(POSTED_2021)} as the price until the operator's new contract
        is signed.
        -- .agent/past_fixes.md
        ## Night stays charged twice (2023-07-30)
        Symptom: stays across midnight got two tickets. Fix: one stay, one charge over the whole stay.
        -- .agent/past_fixes.md
        ## Old receipts reprinted (2024-06-11)
        Symptom: reprints of 2022 receipts showed today's total. Fix: a reprint shows the price of its day
        ({money(POSTED_2021)} back then).
        """),
    )


GENERATOR = hard_family(
    FAMILY, "the price of a started hour at a garage barrier: one site's own price (v0) or the "
    "posted price composed of the operator's rate and a levy (v1)",
    DRAW, (tell_v0, tell_v1), spell)
