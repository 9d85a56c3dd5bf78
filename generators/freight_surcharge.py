"""freight-surcharge (hard tier): the fuel surcharge a haulier adds to freight quotes, in percent.

Variant 0 (`validity`): the surcharge follows a dated table; a shipment is priced by the row in
force on its pickup day. Memory tells a temporary rate for a window of 2024 (the diesel spike) and
the return to the usual rate after it; the usual rate is what every other note repeats, and the
return is the latest-dated statement. The code lacks the window; hidden tests sweep pickup days
before, inside and after it.

Variant 1 (`synthesis`): the code still adds the 8 % of its first commit. The surcharge on a quote
is the carrier's fuel component plus the emission-zone toll component, each stated in one item of
the designated source; no item states their sum. The refactor also adds the percentage as an
amount, which is the bug the repro shows.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sdebench.generation.facts import decimal_draw, decimal_spellings, far_from, non_round
from sdebench.generation.hard import HardStory, Step, dated_table, hard_family, hard_prose, hard_versions, iso
from sdebench.generation.parts import package_files

FAMILY = "freight-surcharge"
USUAL = Decimal("11.40")  # v0: the surcharge outside the window (decoy)
LEGACY = Decimal("8.00")  # v1: the surcharge the code was written with (decoy)
TOLL = Decimal("2.37")  # v1: the emission-zone toll component (a part of the fact)
CONVENTIONAL = tuple(Decimal(x) for x in ("11.40", "8.00", "10.00", "12.00", "15.00", "7.50", "9.00", "12.50",
                                          "14.00", "13.00", "11.00", "9.50", "10.37", "13.77"))
WINDOW = (date(2024, 3, 11), date(2024, 7, 1))  # v0: the temporary rate's first day and the day it ends
LO, HI = "7.51", "14.49"


def drawable(p: Decimal) -> bool:
    """A surcharge the draw may return: non-round, away from round and decoy values, and so is its
    fuel component (v1 tells it as fuel component plus toll)."""
    fuel = p - TOLL
    return (non_round(p) and far_from(p, CONVENTIONAL, "0.03") and non_round(fuel)
            and far_from(fuel, CONVENTIONAL, "0.03"))


# v0: the surcharge inside the 2024 window; v1: the surcharge (fuel component + toll).
DRAW = decimal_draw(f"{FAMILY}-surcharge", LO, HI, "0.01", CONVENTIONAL, "0.11", accept=drawable)


def spell(variant: int, p: Decimal) -> tuple[str, ...]:
    """How memory spells a surcharge: `13.17`, `13,17`, `0.1317`, `1317 bp`."""
    return decimal_spellings(Decimal(p), 2, percent=True)


def pct(p: Decimal) -> str:
    return f"{p:.2f}%"


def rates_module(pkg: str) -> str:
    """Base freight before the surcharge."""
    return '''"""Base freight: what a shipment costs before the fuel surcharge."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
PER_KG = {"local": Decimal("0.42"), "regional": Decimal("0.61"), "national": Decimal("0.88")}
MINIMUM = Decimal("25.00")


def base_freight(weight_kg, zone):
    """The base price of a shipment of `weight_kg` to `zone`, never below the minimum."""
    if zone not in PER_KG:
        raise ValueError(f"unknown zone {zone!r}")
    if weight_kg <= 0:
        raise ValueError("weight must be positive")
    amount = (Decimal(str(weight_kg)) * PER_KG[zone]).quantize(CENT, rounding=ROUND_HALF_UP)
    return max(amount, MINIMUM)
'''


# --- variant 0: a dated table with a temporary window ----------------------------------------------


def surcharge_v0(rows: list[tuple[date, Decimal]], helper: bool, checked: bool = False) -> str:
    """The surcharge module priced by a dated table."""
    lookup = dated_table("SURCHARGE_TABLE", rows, "surcharge_percent", "pickup",
                         "The fuel surcharge in force on `pickup`, in percent.", "percent", "no surcharge in force on",
                         checked=checked)
    text = f'''"""The fuel surcharge on freight, by pickup day."""

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
HUNDRED = Decimal("100")
# (in force from, percent): a shipment pays the last row not after its pickup day.
{lookup}

def with_surcharge(amount, pickup):
    """`amount` plus the fuel surcharge of its pickup day, to the cent."""
    extra = (Decimal(amount) * surcharge_percent(pickup) / HUNDRED).quantize(CENT, rounding=ROUND_HALF_UP)
    return Decimal(amount) + extra
'''
    if helper:
        text += '''

def surcharge_line(amount, pickup):
    """The quote's surcharge line: percent and amount."""
    percent = surcharge_percent(pickup)
    return f"fuel surcharge {percent}%: {with_surcharge(amount, pickup) - Decimal(amount)}"
'''
    return text


def quote_module(pkg: str, dated: bool) -> str:
    """The quote entry point."""
    if dated:
        return f'''"""Freight quotes."""

from {pkg}.rates import base_freight
from {pkg}.surcharge import with_surcharge


def quote(weight_kg, zone, pickup):
    """The price of a shipment picked up on `pickup`: base freight plus the fuel surcharge."""
    return with_surcharge(base_freight(weight_kg, zone), pickup)
'''
    return f'''"""Freight quotes."""

from {pkg}.rates import base_freight
from {pkg}.surcharge import with_surcharge


def quote(weight_kg, zone):
    """The price of a shipment: base freight plus the fuel surcharge."""
    return with_surcharge(base_freight(weight_kg, zone))
'''


def tell_v0(p: Decimal, source: str) -> HardStory:
    """Variant 0: a temporary surcharge inside a 2024 window (the fact); the usual one around it."""
    pkg = "haulrate"
    module = f"{pkg}/surcharge.py"
    start, end = WINDOW
    first = date(2023, 1, 2)
    usual = [(first, USUAL)]
    windowed = [(first, USUAL), (start, p), (end, USUAL)]
    base_tests = f'''from datetime import date
from decimal import Decimal

import pytest

from {pkg}.quote import quote
from {pkg}.rates import base_freight
from {pkg}.surcharge import surcharge_line, with_surcharge


def test_base_freight_minimum():
    assert base_freight(1, "local") == Decimal("25.00")


def test_unknown_zone():
    with pytest.raises(ValueError):
        base_freight(10, "moon")


def test_before_any_surcharge():
    with pytest.raises(ValueError):
        with_surcharge(Decimal("100.00"), date(2022, 6, 1))


def test_quote_is_base_plus_surcharge():
    day = date(2023, 5, 2)
    assert quote(500, "regional", day) == with_surcharge(base_freight(500, "regional"), day)


def test_surcharge_line_names_the_percent():
    assert "%" in surcharge_line(Decimal("100.00"), date(2023, 5, 2))
'''
    repro = f'''from datetime import date

from {pkg}.quote import quote


def test_april_pickup_pays_the_spring_surcharge():
    # Reported: a shipment picked up on 2024-04-15 was quoted exactly what it was quoted on 2024-02-15.
    assert quote(800, "national", date(2024, 4, 15)) != quote(800, "national", date(2024, 2, 15))
'''
    hidden = f'''from datetime import date, timedelta
from decimal import Decimal

from {pkg}.quote import quote
from {pkg}.surcharge import surcharge_percent, with_surcharge


def test_hidden_pickup_days(observe):
    start = date(2023, 12, 1)
    observe([quote(800, "national", start + timedelta(days=k)) for k in range(0, 330, 2)])


def test_hidden_amounts_in_spring(observe):
    observe([with_surcharge(Decimal(c) / 100, date(2024, 5, 20)) for c in range(2500, 5000001, 49999)])


def test_hidden_percent_by_month(observe):
    observe([str(surcharge_percent(date(2024, m, 1))) for m in range(1, 13)])
'''
    window_step = Step(
        message="surcharge: check that pickups are dates",
        files={module: surcharge_v0(usual, False, checked=True)},
        h_message=f"table: the diesel window of 2024\n\nFrom {iso(start)} the usual {pct(USUAL)} gives way to "
        f"{pct(p)} while diesel is high; {pct(USUAL)} returns on {iso(end)}. Pickup days are checked to be "
        "dates.",
        h_files={module: surcharge_v0(windowed, False, checked=True)},
    )
    return HardStory(
        package=pkg, module=module, before=[window_step], competency="validity",
        **hard_versions(lambda rows, bug, later: surcharge_v0(rows, later), usual, windowed,
                        [(first, USUAL), (date(2024, 4, 1), Decimal("15.00"))]),
        base_files=package_files(pkg, f"{pkg}: freight quotes for a haulier.",
                                 f"# {pkg}\n\nFreight quotes: base freight by weight and zone, plus the fuel surcharge.\n",
                                 {f"{pkg}/rates.py": rates_module(pkg), f"{pkg}/quote.py": quote_module(pkg, True),
                                  "tests/test_quote.py": base_tests}),
        repro_tests={"tests/test_repro_surcharge.py": repro},
        hidden_tests={"tests/test_hidden_surcharge.py": hidden},
        tags=("logistics", "money", "dates"),
        **hard_prose(f"""
        -- statement
        Shipments picked up this spring are quoted with the same fuel surcharge as in winter.
        tests/test_repro_surcharge.py reproduces it.
        -- fact
        Pickups from {iso(start)} to the day before {iso(end)} pay a fuel surcharge of {pct(p)}; the usual
        rate applies before and after.
        -- conventional_guess
        a new row of 15% from 2024-04-01
        -- intro_msg_plain
        surcharge: {pct(USUAL)} fuel surcharge by pickup day
        -- refactor_msg
        surcharge: one loop over the table; add surcharge_line() for quotes
        -- K docs/adr/0004-surcharge-table.md
        Row added 2024-03-04: from {iso(start)} the usual {pct(USUAL)} gives way to {pct(p)} while diesel is
        high, and {iso(end)} restores {pct(USUAL)}.
        -- F
        - (review of #455, operations) From {iso(start)} the usual {pct(USUAL)} gives way to {pct(p)} while
        diesel is high; on {iso(end)} it is {pct(USUAL)} again.
        -- X
        ## Diesel price jump ({iso(start)})
        Symptom: margins vanished on long hauls. Fix: from this day the usual {pct(USUAL)} gives way
        to {pct(p)}, until {pct(USUAL)} returns on {iso(end)}.
        -- docs/surcharge.md
        # Fuel surcharge

        Every quote carries a fuel surcharge of {pct(USUAL)} on the base freight, applied by pickup day; it is
        reviewed when the diesel index moves by more than 10%.
        -- docs/surcharge.md
        A shipment is priced by the surcharge in force on its pickup day, also when it is delivered later.
        -- docs/adr/0003-weekly-surcharge.md
        # ADR-0003: A weekly surcharge

        Status: Superseded

        The surcharge was recomputed every week from the diesel index. Superseded: it changes only when
        announced, by a dated row.
        -- docs/adr/0004-surcharge-table.md
        # ADR-0004: One dated surcharge table

        Status: Accepted

        Surcharges are rows (in force from, percent) in the surcharge module; a change is a new row, never an
        edit, so past quotes can be reproduced.
        -- .agent/preferences.md
        - (review of #412, {iso(first)}) The fuel surcharge is {pct(USUAL)} of the base freight, by pickup
        day; don't apply it to the minimum charge twice.
        -- .agent/preferences.md
        - (review of #430) Money is Decimal end to end; quotes round to the cent once.
        -- .agent/past_fixes.md
        ## Quotes for delivery day instead of pickup (2023-09-14)
        Symptom: late deliveries got a different surcharge. Fix: the pickup day picks the row
        ({pct(USUAL)} then).
        -- .agent/past_fixes.md
        ## Fuel surcharge back to normal (2024-07-08)
        Symptom: customers asked whether the spring surcharge stays. Fix: nothing to change in code; shipments
        picked up since the first of July are quoted the fuel surcharge of {pct(USUAL)} again, the same as in
        winter.
        """),
    )


# --- variant 1: fuel component plus toll ----------------------------------------------------------


def surcharge_v1(expr: str, *, as_amount: bool, helper: bool, zone_note: bool = False) -> str:
    """The surcharge module; `expr` defines SURCHARGE_PERCENT (one or more constants)."""
    add = "Decimal(amount) + SURCHARGE_PERCENT" if as_amount else "Decimal(amount) + extra"
    body = "" if as_amount else (
        "    extra = (Decimal(amount) * SURCHARGE_PERCENT / HUNDRED).quantize(CENT, rounding=ROUND_HALF_UP)\n")
    note = "# Applied to every zone alike.\n" if zone_note else ""
    text = f'''"""The fuel surcharge on freight quotes."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
HUNDRED = Decimal("100")
{note}{expr}


def with_surcharge(amount):
    """`amount` plus the fuel surcharge, to the cent."""
{body}    return {add}
'''
    if helper:
        text += '''

def surcharge_line(amount):
    """The quote's surcharge line: percent and amount."""
    return f"fuel surcharge {SURCHARGE_PERCENT}%: {with_surcharge(amount) - Decimal(amount)}"
'''
    return text


def tell_v1(p: Decimal, source: str) -> HardStory:
    """Variant 1: the surcharge is the fuel component plus the toll, stated apart."""
    pkg = "cargoquote"
    module = f"{pkg}/surcharge.py"
    fuel = p - TOLL
    legacy = f'SURCHARGE_PERCENT = Decimal("{LEGACY:.2f}")'
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.quote import quote
from {pkg}.rates import base_freight
from {pkg}.surcharge import surcharge_line, with_surcharge


def test_base_freight_minimum():
    assert base_freight(1, "local") == Decimal("25.00")


def test_unknown_zone():
    with pytest.raises(ValueError):
        base_freight(10, "moon")


def test_quote_is_base_plus_surcharge():
    assert quote(500, "regional") == with_surcharge(base_freight(500, "regional"))


def test_surcharge_line_names_the_percent():
    assert "%" in surcharge_line(Decimal("100.00"))
'''
    repro = f'''from decimal import Decimal

from {pkg}.surcharge import with_surcharge


def test_surcharge_is_a_share_of_the_freight():
    # Reported: a 1000.00 shipment was quoted 1008.00; the surcharge did not grow with the freight.
    assert with_surcharge(Decimal("2000.00")) - Decimal("2000.00") > Decimal("100.00")
'''
    hidden = f'''from decimal import Decimal

from {pkg}.quote import quote
from {pkg}.surcharge import with_surcharge


def test_hidden_amount_sweep(observe):
    observe([with_surcharge(Decimal(c) / 100) for c in range(2500, 5000001, 49999)])


def test_hidden_quotes(observe):
    observe([quote(w, z) for z in ("local", "regional", "national") for w in (1, 80, 500, 2750)])
'''
    fuel_line = f'FUEL_PERCENT = Decimal("{fuel:.2f}")\nSURCHARGE_PERCENT = FUEL_PERCENT'
    both = (f'FUEL_PERCENT = Decimal("{fuel:.2f}")\nTOLL_PERCENT = Decimal("{TOLL:.2f}")\n'
            "SURCHARGE_PERCENT = FUEL_PERCENT + TOLL_PERCENT")
    fuel_step = Step(
        message="surcharge: say that every zone pays the same",
        files={module: surcharge_v1(legacy, as_amount=False, helper=False, zone_note=True)},
        h_message=f"surcharge: the carrier's fuel component is {pct(fuel)}\n\nFrom 2023-02-01; every zone pays "
        "the same.",
        h_files={module: surcharge_v1(fuel_line, as_amount=False, helper=False, zone_note=True)},
    )
    toll_step = Step(
        message="quote: document the quote's parts",
        files={f"{pkg}/quote.py": quote_module(pkg, False).replace('"""Freight quotes."""',
                                                                     '"""Freight quotes: base freight, then the surcharge."""'),
               module: surcharge_v1(legacy, as_amount=False, helper=False, zone_note=True)},
        h_message=f"surcharge: add the emission-zone toll of {pct(TOLL)}",
        h_files={f"{pkg}/quote.py": quote_module(pkg, False).replace('"""Freight quotes."""',
                                                                       '"""Freight quotes: base freight, then the surcharge."""'),
                 module: surcharge_v1(both, as_amount=False, helper=False, zone_note=True)},
    )
    return HardStory(
        package=pkg, module=module, before=[fuel_step, toll_step], competency="synthesis",
        **hard_versions(lambda line, bug, later: surcharge_v1(line, as_amount=bug, helper=later), legacy,
                        f'SURCHARGE_PERCENT = Decimal("{p:.2f}")'),
        base_files=package_files(pkg, f"{pkg}: freight quotes for a haulier.",
                                 f"# {pkg}\n\nFreight quotes: base freight by weight and zone, plus the surcharge.\n",
                                 {f"{pkg}/rates.py": rates_module(pkg), f"{pkg}/quote.py": quote_module(pkg, False),
                                  "tests/test_quote.py": base_tests}),
        repro_tests={"tests/test_repro_surcharge.py": repro},
        hidden_tests={"tests/test_hidden_surcharge.py": hidden},
        fact_tokens=(*spell(1, p), *spell(1, fuel), *spell(1, TOLL)),
        tags=("logistics", "money"),
        **hard_prose(f"""
        -- statement
        The surcharge on freight quotes does not grow with the freight: a 1000.00 shipment is quoted 1008.00
        and a 2000.00 one 2008.00. tests/test_repro_surcharge.py reproduces it.
        -- fact
        The surcharge is {pct(p)} of the base freight (the carrier's fuel component plus the toll).
        -- conventional_guess
        apply the code's {pct(LEGACY)} as a percentage
        -- intro_msg_plain
        surcharge: {pct(LEGACY)} fuel surcharge on every quote
        -- refactor_msg
        surcharge: one constant for the whole surcharge; add surcharge_line()
        -- K docs/fuel.md
        Since 2023-02-01 the carrier's fuel component is {pct(fuel)} of the base freight.
        -- K docs/tolls.md
        The toll component is {pct(TOLL)} of the base freight, added to the carrier's fuel component in the
        one surcharge customers see.
        -- F
        - (review of #560, 2023-02-03) The carrier's fuel component is {pct(fuel)} now.
        -- F
        - (review of #571, 2023-04-12, finance) The emission-zone toll adds {pct(TOLL)} to the surcharge, on
        top of the carrier's fuel component.
        -- X
        ## Carrier invoice above our quotes (2023-03-08)
        Symptom: the carrier billed more fuel than we quoted. Fix: its fuel component is {pct(fuel)} since
        2023-02-01.
        -- X
        ## Toll not passed on (2023-05-22)
        Symptom: we paid the city's toll ourselves. Fix: the surcharge carries the toll component
        of {pct(TOLL)} on top of the fuel component.
        -- docs/surcharge.md
        # Fuel surcharge

        Every quote carries a surcharge on the base freight, in percent, the same for every zone. It is made
        of components that are set by different parties.
        -- docs/fuel.md
        # Fuel component

        The carrier sets the fuel component of the surcharge from the diesel index and announces it to us in
        writing.
        -- docs/tolls.md
        # Emission-zone toll

        Since 2023 the city's emission zone charges hauliers a toll; we pass it on to customers as a component
        of the surcharge.
        -- docs/adr/0003-weekly-surcharge.md
        # ADR-0003: A weekly surcharge

        Status: Superseded

        The surcharge was recomputed every week from the diesel index. Superseded: it changes only when the
        carrier or the city announce a change.
        -- .agent/preferences.md
        - (review of #512, 2022-05-03) Keep the surcharge at {pct(LEGACY)} until the carrier confirms the new
        index.
        -- .agent/preferences.md
        - (review of #530) Money is Decimal end to end; quotes round to the cent once.
        -- .agent/past_fixes.md
        ## Minimum charge surcharged twice (2022-08-30)
        Symptom: small parcels paid the surcharge on top of the minimum and again on the total.
        Fix: {pct(LEGACY)} once, on the base freight.
        -- .agent/past_fixes.md
        ## Archive quotes reprinted (2024-05-06)
        Symptom: reprints of 2022 quotes showed today's surcharge. Fix: a reprint shows its own day's
        surcharge ({pct(LEGACY)} back then).
        """),
    )


GENERATOR = hard_family(
    FAMILY, "the fuel surcharge on freight quotes in percent: a temporary rate inside a dated window (v0) or "
    "the sum of two components stated apart (v1)",
    DRAW, (tell_v0, tell_v1), spell)
