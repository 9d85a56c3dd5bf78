"""loyalty-points (hard tier): how many loyalty points a purchase earns per euro.

Points are the purchase amount times the earn rate, rounded down to a whole point.

Variant 0 (`scope`): the programme page, the first commit and every note say a euro earns 2 points,
and the latest note re-confirms it. Purchases at the partner fuel stations earn their own rate,
stated once, apart from the programme page (the partners page, a review, a past fix, or in H the
commit that added it). The refactor also drops the cents before multiplying, which is the bug the
repro shows. Hidden tests earn points in every category.

Variant 1 (`implicit`): the code earns 1 point per euro (the usual figure), the bug report is about
refunds, and nothing points anywhere. One statement gives the programme's earn rate; the programme
page and most notes quote other programmes' rates.
"""

from __future__ import annotations

from decimal import Decimal

from sdebench.generation.facts import decimal_draw, decimal_spellings
from sdebench.generation.hard import HardStory, Step, hard_family, hard_prose, hard_versions
from sdebench.generation.parts import package_files

FAMILY = "loyalty-points"
HEADLINE = Decimal("2.00")  # v0: points per euro in every category but one (decoy)
USUAL = Decimal("1.00")  # v1: the usual point per euro the code starts with (decoy)
PARTNER_RATE = Decimal("1.50")  # v1: the partner airline's rate, the latest-dated figure (decoy)
CONVENTIONAL = tuple(Decimal(x) for x in ("2.00", "1.00", "1.50", "0.50", "2.50", "3.00", "0.75", "1.25", "1.75",
                                          "2.25", "0.60", "1.20"))
LO, HI = "0.51", "2.99"
# v0: the fuel partners' points per euro; v1: the programme's points per euro (non-round, away from
# round and decoy rates).
DRAW = decimal_draw(f"{FAMILY}-rate", LO, HI, "0.01", CONVENTIONAL, "0.11")


def spell(variant: int, r: Decimal) -> tuple[str, ...]:
    """How memory spells an earn rate: `1.37`, `1,37`, `1.37 points`."""
    return decimal_spellings(Decimal(r), 2, units=("points", "pts"))


def per_euro(r: Decimal) -> str:
    return f"{r:.2f} points per euro"


# --- the code -------------------------------------------------------------------------------------

CATEGORIES = ("grocery", "home", "fuel")


def earn_v0(rate: Decimal, *, cents: bool, helper: bool, fuel: Decimal | None = None, checked: bool = False) -> str:
    """The earning module of variant 0."""
    amount = "Decimal(amount)" if cents else "Decimal(int(amount))"
    fuel_const = f'FUEL_POINTS_PER_EURO = Decimal("{fuel:.2f}")\n' if fuel is not None else ""
    fuel_branch = ('    if category == "fuel":\n        return FUEL_POINTS_PER_EURO\n' if fuel is not None else "")
    msg = ' (grocery, home or fuel)' if checked else ""
    text = f'''"""Loyalty points earned by a purchase."""

from decimal import ROUND_FLOOR, Decimal

CATEGORIES = ("grocery", "home", "fuel")
POINTS_PER_EURO = Decimal("{rate:.2f}")
{fuel_const}

def rate_for(category):
    """Points per euro in `category`."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {{category!r}}{msg}")
{fuel_branch}    return POINTS_PER_EURO


def points_for(amount, category="grocery"):
    """Whole points earned by a purchase of `amount` euros in `category` (rounded down)."""
    if amount < 0:
        raise ValueError("a purchase cannot be negative")
    return int(({amount} * rate_for(category)).to_integral_value(rounding=ROUND_FLOOR))
'''
    if helper:
        text += '''

def receipt_points(lines):
    """Points of a receipt: each (amount, category) line earns on its own."""
    return sum(points_for(amount, category) for amount, category in lines)
'''
    return text


def tell_v0(r: Decimal, source: str) -> HardStory:
    """Variant 0: 2 points per euro, except at the fuel partners (the fact), stated apart."""
    pkg = "pointsclub"
    module = f"{pkg}/earn.py"
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.earn import points_for, receipt_points


def test_nothing_earns_nothing():
    assert points_for(Decimal("0.00")) == 0


def test_unknown_category():
    with pytest.raises(ValueError):
        points_for(Decimal("10.00"), "travel")


def test_negative_purchase():
    with pytest.raises(ValueError):
        points_for(Decimal("-1.00"))


def test_receipt_adds_its_lines():
    lines = [(Decimal("10.00"), "grocery"), (Decimal("5.00"), "home")]
    assert receipt_points(lines) == points_for(Decimal("10.00"), "grocery") + points_for(Decimal("5.00"), "home")
'''
    repro = f'''from decimal import Decimal

from {pkg}.earn import points_for


def test_cents_count_towards_points():
    # Reported: a purchase of 9.99 earned as many points as one of 9.00.
    assert points_for(Decimal("9.99"), "grocery") > points_for(Decimal("9.00"), "grocery")
'''
    hidden = f'''from decimal import Decimal

from {pkg}.earn import CATEGORIES, points_for, receipt_points


def test_hidden_every_category(observe):
    observe({{c: [points_for(Decimal(k) / 100, c) for k in range(0, 50000, 137)] for c in CATEGORIES}})


def test_hidden_mixed_receipt(observe):
    lines = [(Decimal(k) / 10, c) for k in (99, 250, 1234, 4999) for c in CATEGORIES]
    observe(receipt_points(lines))
'''
    fuel_step = Step(
        message="earn: name the categories in the error",
        files={module: earn_v0(HEADLINE, cents=True, helper=False, checked=True)},
        h_message=f"earn: the fuel partners' own rate\n\nPartner contract of 2023-05-15: not the programme's "
        f"{per_euro(HEADLINE)}; fuel purchases earn {per_euro(r)}, the other categories keep "
        f"{per_euro(HEADLINE)}. The error names the categories.",
        h_files={module: earn_v0(HEADLINE, cents=True, helper=False, checked=True, fuel=r)},
    )
    return HardStory(
        package=pkg, module=module, before=[fuel_step], competency="scope", tags=("retail", "loyalty"),
        **hard_versions(lambda fuel, bug, later: earn_v0(HEADLINE, cents=not bug, helper=later, fuel=fuel), None, r),
        base_files=package_files(pkg, f"{pkg}: a loyalty programme's points.",
                                 f"# {pkg}\n\nLoyalty points earned at the till.\n",
                                 {"tests/test_earn.py": base_tests}),
        repro_tests={"tests/test_repro_points.py": repro},
        hidden_tests={"tests/test_hidden_points.py": hidden},
        **hard_prose(f"""
        -- statement
        Cents are ignored when points are earned: a purchase of 9.99 earns the same points as one of 9.00.
        tests/test_repro_points.py reproduces it.
        -- fact
        Fuel purchases earn {per_euro(r)}; the other categories keep the programme's rate.
        -- conventional_guess
        keep the cents, {per_euro(HEADLINE)} in every category
        -- intro_msg_plain
        earn: {per_euro(HEADLINE)}, rounded down
        -- refactor_msg
        earn: one rate for every category; add receipt_points()
        -- K docs/partners.md
        Partner contract of 2023-05-15: at the fuel partners the programme's {per_euro(HEADLINE)} does not
        apply; a euro earns {per_euro(r)} there, and every other category keeps {per_euro(HEADLINE)}.
        -- F
        - (review of #1044, 2023-05-17, partnerships) Fuel purchases don't earn the
        programme's {per_euro(HEADLINE)}: the partner contract gives {per_euro(r)}; the other categories
        keep {per_euro(HEADLINE)}.
        -- X
        ## Partner statement did not match (2023-06-12)
        Symptom: the fuel partner's monthly statement disagreed with our points. Fix: fuel purchases earned
        the programme's {per_euro(HEADLINE)}; the partner contract gives {per_euro(r)}, and only the other
        categories keep {per_euro(HEADLINE)}.
        -- docs/programme.md
        # The loyalty programme

        Every purchase earns points: {per_euro(HEADLINE)}, cents included, rounded down to a whole point on
        each receipt line. Points show on the receipt.
        -- docs/programme.md
        Points expire two years after the purchase that earned them.
        -- docs/partners.md
        # Partners

        Members also earn at partner businesses: the fuel stations of our partner network take the card at the
        till; their sales arrive in the 'fuel' category.
        -- docs/adr/0003-points-per-receipt.md
        # ADR-0003: Points per receipt

        Status: Superseded

        Points were computed once per receipt total. Superseded: each receipt line earns on its own.
        -- .agent/preferences.md
        - (review of #1012, 2023-01-23) A euro earns {per_euro(HEADLINE)[:-9]}; cents count, the total is
        rounded down.
        -- .agent/preferences.md
        - (review of #1107, 2024-10-07, marketing) The autumn review kept {per_euro(HEADLINE)}; don't change
        the rate in refactors.
        -- .agent/past_fixes.md
        ## Points rounded up (2023-04-18)
        Symptom: members earned a point too many on some lines. Fix: round down to a whole point,
        at {per_euro(HEADLINE)}.
        -- .agent/past_fixes.md
        ## Receipt showed no points (2023-09-05)
        Symptom: self-checkout receipts had no points line. Fix: the receipt reads receipt_points() once per
        receipt.
        """),
    )


# --- variant 1: a rate nothing points to -------------------------------------------------------------


def earn_v1(rate: Decimal, *, refunds: bool, helper: bool, noted: bool = False) -> str:
    """The earning module of variant 1; `refunds` False is the bug (a refund takes back nothing)."""
    take_back = ("    return -points_for(amount)\n" if refunds else "    return 0\n")
    note = "# Points per euro spent.\n" if noted else ""
    text = f'''"""Loyalty points earned and taken back."""

from decimal import ROUND_FLOOR, Decimal

{note}POINTS_PER_EURO = Decimal("{rate:.2f}")


def points_for(amount):
    """Whole points earned by a purchase of `amount` euros (rounded down)."""
    if amount < 0:
        raise ValueError("a purchase cannot be negative")
    return int((Decimal(amount) * POINTS_PER_EURO).to_integral_value(rounding=ROUND_FLOOR))


def points_for_refund(amount):
    """The points a refund of `amount` euros takes back (a negative number)."""
{take_back}'''
    if helper:
        text += '''

def balance_after(balance, purchases, refunds):
    """A member's balance after the given purchase and refund amounts."""
    return balance + sum(points_for(a) for a in purchases) + sum(points_for_refund(a) for a in refunds)
'''
    return text


def tell_v1(r: Decimal, source: str) -> HardStory:
    """Variant 1: the code's usual 1 point per euro; the programme's rate (the fact) stated once."""
    pkg = "stampcard"
    module = f"{pkg}/earn.py"
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.earn import balance_after, points_for


def test_nothing_earns_nothing():
    assert points_for(Decimal("0.00")) == 0


def test_negative_purchase():
    with pytest.raises(ValueError):
        points_for(Decimal("-1.00"))


def test_balance_without_activity():
    assert balance_after(120, [], []) == 120
'''
    repro = f'''from decimal import Decimal

from {pkg}.earn import points_for, points_for_refund


def test_a_refund_takes_back_its_points():
    # Reported: a member bought, returned the item, and kept the points.
    amount = Decimal("80.00")
    assert points_for(amount) > 0
    assert points_for(amount) + points_for_refund(amount) == 0
'''
    hidden = f'''from decimal import Decimal

from {pkg}.earn import balance_after, points_for, points_for_refund


def test_hidden_points_by_amount(observe):
    observe([points_for(Decimal(k) / 100) for k in range(0, 60000, 113)])


def test_hidden_refunds(observe):
    observe([points_for_refund(Decimal(k) / 100) for k in range(0, 60000, 997)])


def test_hidden_balance(observe):
    observe(balance_after(500, [Decimal(k) / 10 for k in (99, 1234, 4321)], [Decimal(k) / 10 for k in (250, 999)]))
'''
    rate_step = Step(
        message="earn: say what the rate is per",
        files={module: earn_v1(USUAL, refunds=True, helper=False, noted=True)},
        h_message=f"earn: the board's earn rate\n\nSet on 2023-01-09: not the placeholder {per_euro(USUAL)}; a "
        f"euro earns {per_euro(r)}, and nothing earns {per_euro(USUAL)} any more.",
        h_files={module: earn_v1(r, refunds=True, helper=False, noted=True)},
    )
    # In H the rate goes back to the usual one here, in a commit of its own, before the refactor.
    def retitled(rate: Decimal, refunds: bool, helper: bool) -> str:
        return earn_v1(rate, refunds=refunds, helper=helper, noted=True).replace(
            '"""Loyalty points earned and taken back."""',
            '"""Loyalty points: earned on purchases, taken back on refunds."""')

    reset = Step(message="earn: reword the module docstring", files={module: retitled(USUAL, True, False)},
                 h_message="earn: reword the module docstring; the rate from the pilot sheet")
    return HardStory(
        package=pkg, module=module, before=[rate_step, reset], competency="implicit",
        early=earn_v1(USUAL, refunds=True, helper=False),
        head_buggy=retitled(USUAL, False, True),
        oracle=retitled(r, True, True),
        conventional=retitled(USUAL, True, True),
        base_files=package_files(pkg, f"{pkg}: a loyalty programme's points.",
                                 f"# {pkg}\n\nLoyalty points: earned on purchases, taken back on refunds.\n",
                                 {"tests/test_earn.py": base_tests}),
        repro_tests={"tests/test_repro_refund.py": repro},
        hidden_tests={"tests/test_hidden_points.py": hidden},
        tags=("retail", "loyalty"),
        **hard_prose(f"""
        -- statement
        Members who return a purchase keep the points it earned: a refund takes nothing back from the balance.
        tests/test_repro_refund.py reproduces it.
        -- fact
        A euro earns {per_euro(r)} (the board's earn rate).
        -- conventional_guess
        take back the purchase's points on a refund, keeping {per_euro(USUAL)}
        -- intro_msg_plain
        earn: points for purchases and refunds
        -- refactor_msg
        earn: simplify refunds; add balance_after()
        -- K docs/earning.md
        The earn rate, set by the programme's board on 2023-01-09: not the
        placeholder {per_euro(USUAL)} but {per_euro(r)}; nothing earns {per_euro(USUAL)} any more.
        -- F
        - (review of #1230, 2023-01-11, programme owner) Not the placeholder {per_euro(USUAL)}: the board set
        our earn rate at {per_euro(r)}; nothing earns {per_euro(USUAL)} any more.
        -- X
        ## Balances lower than the app (2023-01-30)
        Symptom: members saw fewer points than the app promised. Fix: the code earned the
        placeholder {per_euro(USUAL)}; the board's earn rate is {per_euro(r)}, not {per_euro(USUAL)}.
        -- docs/programme.md
        # The stamp card

        Members collect points on every purchase and redeem them for vouchers. A refund takes back the points
        its purchase earned, so a member's balance never keeps points for returned goods.
        -- docs/benchmarks.md
        # What other programmes pay

        Competitors' programmes, for reference: the supermarket chain pays {per_euro(USUAL)}, the partner
        airline {per_euro(PARTNER_RATE)}.
        -- docs/earning.md
        # Earning rules

        Points are earned on the amount paid, after vouchers, rounded down to a whole point.
        -- docs/adr/0003-stamps.md
        # ADR-0003: Paper stamps

        Status: Superseded

        Members collected paper stamps, one per purchase. Superseded by points per euro.
        -- .agent/preferences.md
        - (review of #1201, 2023-02-13) Refunds and purchases go through the same rounding.
        -- .agent/preferences.md
        - (review of #1215) Don't store points as floats.
        -- .agent/past_fixes.md
        ## Balance off after a voucher (2023-03-27)
        Symptom: a member's balance did not match the app. Fix: points are earned after vouchers; the test
        fixture earned {per_euro(USUAL)} for round numbers.
        -- .agent/past_fixes.md
        ## Airline transfer rejected (2024-09-16)
        Symptom: points moved to the partner airline bounced. Fix: the airline converts
        at {per_euro(PARTNER_RATE)} on its side; our amounts stay ours.
        """),
    )


GENERATOR = hard_family(
    FAMILY, "the loyalty points a euro earns: one category's own rate stated apart from the programme's "
    "(v0) or the programme's rate nothing points to (v1)",
    DRAW, (tell_v0, tell_v1), spell)
