"""inventory-reorder: a stock service reorders too late because its safety margin is wrong.

The reorder point of an item is its lead-time demand (daily demand x lead days) grown by a safety
margin; an item is reordered when stock on hand is at or below that point. The margin was lowered
to 10% by a refactor. The repro only needs some margin above 15%, which the conventional 20-25%
also gives; hidden tests sweep stock levels across every plausible reorder point (the real one
is drawn per variant from margins no rule of thumb would give). Exploration-heavy: the rule sits in one module of a package
padded with realistic filler modules and a long history (see `GENERATOR.build_sized` for the size knob).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import draw_integer, integer_space
from sdebench.generation.family import Family
from sdebench.generation.kit import FillerVocab, Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.sized import SizedStory

FAMILY = "inventory-reorder"
HEAD_MARGIN = "0.10"
CONVENTIONAL_MARGIN = "0.25"
# Variant -> named repo size; variant 2 is the large exploration-heavy repo of variant 0's shape.
SIZES = {0: "default", 1: "default", 2: "large"}

# The subpackage (among filler ones) that holds the rule module, per shape.
HOMES = {0: "purchasing", 1: "planning"}


@dataclass(frozen=True)
class Shape:
    """Names that differ between variants."""

    package: str
    rule_module: str  # module (under the package) that holds the margin
    item: str  # what is stocked
    vocab: FillerVocab


SHAPES = {
    0: Shape("stockroom", "replenishment", "SKU", FillerVocab(
        "stockroom", ("sku", "bin", "shipment", "supplier", "pallet", "count"),
        ("quantity", "weight_kg", "unit_cost", "shelf_days"), ("region", "carrier", "category", "aisle"),
        ("receiving", "audit", "reports", "picking", "returns", "transfers", "labels", "pricing"))),
    1: Shape("partsdepot", "restock", "part", FillerVocab(
        "partsdepot", ("part", "kit", "vendor", "crate", "order_line", "cycle_count"),
        ("units", "lead_days", "list_price", "demand"), ("plant", "vendor_code", "family", "zone"),
        ("inbound", "kitting", "costing", "dispatch", "quality", "vendors", "cycle", "planning"))),
}


def drawable(pct: int) -> bool:
    """Whether the family's draw may return `pct`."""
    return bool(pct % 5)


def fact_margin(variant: int) -> int:
    """The safety margin of a variant in percent: 31..69, never a multiple of 5."""
    return draw_integer(f"{FAMILY}-margin-{variant}", 31, 69, drawable)


# Conventional values first, then every integer of the draw's range and its neighbours.
SPACE = integer_space((25, 20, 10, 15, 30, 50, 40, 33), 31, 69, drawable, margin=3)


def tokens(pct: int) -> tuple[str, ...]:
    """Every spelling that would reveal the margin."""
    return (f"0.{pct}", f"{pct}%", f"{pct} %", f"{pct} percent", f"{pct} per cent", f"1.{pct}", f"1{pct}%")


def rule_module(margin: str, per_site: bool) -> str:
    """The module holding the reorder rule; `per_site` is the refactor's per-warehouse override."""
    text = f'''"""Reorder points: when stock is low enough that a purchase order must go out."""

# Extra stock kept on top of lead-time demand, as a fraction of it.
SAFETY_MARGIN = {margin}
'''
    if per_site:
        text += '''

def reorder_point(daily_demand, lead_days, margin=None):
    """Units on hand at or below which an item is reordered."""
    margin = SAFETY_MARGIN if margin is None else margin
    lead_time_demand = daily_demand * lead_days
    return lead_time_demand * (1 + margin)
'''
    else:
        text += '''

def reorder_point(daily_demand, lead_days):
    """Units on hand at or below which an item is reordered."""
    return daily_demand * lead_days * (1 + SAFETY_MARGIN)
'''
    text += '''

def needs_reorder(on_hand, daily_demand, lead_days):
    """Whether an item with `on_hand` units must be reordered now."""
    if daily_demand <= 0:
        return False
    return on_hand <= reorder_point(daily_demand, lead_days)
'''
    return text


def service_module(s: Shape, dotted: str) -> str:
    """The public service: builds purchase suggestions from stock levels."""
    return f'''"""Purchase suggestions from current stock levels."""

from dataclasses import dataclass

from {dotted} import needs_reorder


@dataclass
class Item:
    """One {s.item} in the catalogue."""

    code: str
    on_hand: int
    daily_demand: float
    lead_days: int


def suggest_orders(items):
    """Codes of the items that need a purchase order now, sorted."""
    return sorted(item.code for item in items if needs_reorder(item.on_hand, item.daily_demand, item.lead_days))
'''


def story(variant: int, pct: int) -> Story:
    """The story of one variant whose margin is `pct`, without its filler (see SIZED)."""
    s = SHAPES[variant % 2]
    pkg, mod, dotted = SIZED.layout(variant, s.rule_module)
    item = f'from {pkg}.service import Item, suggest_orders\n'
    base_tests = f'''{item}

def test_no_demand_never_reorders():
    assert suggest_orders([Item("A1", 0, 0, 9)]) == []


def test_empty_shelf_reorders():
    assert suggest_orders([Item("A1", 0, 4, 9)]) == ["A1"]


def test_plenty_of_stock_does_not_reorder():
    assert suggest_orders([Item("A1", 9000, 4, 9)]) == []


def test_suggestions_are_sorted():
    assert suggest_orders([Item("B2", 0, 1, 2), Item("A1", 0, 1, 2)]) == ["A1", "B2"]
'''
    repro = f'''{item}

def test_low_stock_is_reordered_in_time():
    # 100 a day, 10 days lead time: 1150 on hand covers lead time with almost no buffer.
    assert suggest_orders([Item("X9", 1150, 100, 10)]) == ["X9"]
'''
    # Held-out checks sweep stock levels across every plausible reorder point: the inputs
    # single out no boundary, and the oracle's answers are recorded, never written here.
    hidden = f'''import pytest

{item}from {dotted} import SAFETY_MARGIN


def test_hidden_reorder_point(observe):
    stock = [Item(f"S{{n}}", n, 100, 10) for n in range(1250, 1751)]
    observe(suggest_orders(stock))


def test_hidden_point_scales_with_demand(observe):
    stock = [Item(f"T{{n}}", n, 37, 7) for n in range(300, 500)]
    observe(suggest_orders(stock))


def test_hidden_margin_setting():
    assert SAFETY_MARGIN == pytest.approx(0.{pct})
'''
    sibling = "the returns warehouse" if variant % 2 == 0 else "the spares depot"
    return Story(
        package=pkg,
        module=mod,
        **rule_versions(lambda margin, later: rule_module(margin, per_site=later), f"0.{pct}", HEAD_MARGIN,
                        CONVENTIONAL_MARGIN, first_wrong="0.15"),
        base_files=package_files(pkg, f"{pkg}: stock levels and purchasing for {s.item}s.",
                                 f"# {pkg}\n\nTracks stock of each {s.item} and suggests purchase orders.\n",
                                 {f"{pkg}/service.py": service_module(s, dotted),
                                  "tests/test_service.py": base_tests}),
        repro_tests={"tests/test_repro_stockout.py": repro},
        hidden_tests={"tests/test_hidden_reorder_point.py": hidden},
        tags=("inventory", "magic-number", "large-repo"),
        **prose(f"""
        -- statement
        We keep running out of stock. A {s.item} selling 100 a day with a 10-day lead time had 1150 units on
        hand and no purchase order was suggested; it ran dry before the delivery. tests/test_repro_stockout.py
        shows it. Please fix the purchase suggestions.
        -- fact
        Reorder points add a safety margin of {pct}% of lead-time demand (SAFETY_MARGIN = 0.{pct}).
        -- conventional_guess
        SAFETY_MARGIN = {CONVENTIONAL_MARGIN} (a textbook quarter of lead-time demand)
        -- intro_msg_fact
        {s.rule_module}: reorder points with a {pct}% safety margin

        Lead-time demand plus {pct}% (SAFETY_MARGIN = 0.{pct}), sized from measured supplier lateness.
        -- intro_msg_plain
        {s.rule_module}: reorder points from lead-time demand
        -- refactor_msg
        {s.rule_module}: allow a per-site margin override; simplify
        -- K docs/adr/0005-reorder-points.md
        Safety margin: reorder points add {pct}% of lead-time demand (SAFETY_MARGIN = 0.{pct}), sized from two
        years of supplier lateness; anything lower runs us dry during late deliveries. This supersedes
        ADR-0003.
        -- F
        - (review of #214, purchasing) The safety margin is 0.{pct} of lead-time demand, not the textbook
        quarter. Please stop rounding it.
        -- X
        ## Stock-outs during supplier delays
        Symptom: {sibling} ran out of stock before reorders arrived. Fix: its reorder point used a too-small
        margin; set SAFETY_MARGIN to 0.{pct} ({pct}% of lead-time demand), the company-wide value.
        -- docs/adr/0005-reorder-points.md
        # ADR-0005: Reorder points

        Status: Accepted

        The reorder point of an item is computed from its average daily demand over the trailing quarter and
        the lead time its supplier quotes; purchase suggestions are computed nightly, one per item.
        -- docs/adr/0003-safety-stock.md
        # ADR-0003: Safety stock

        Status: Superseded

        Reorder points add {int(float(CONVENTIONAL_MARGIN) * 100)}% of lead-time demand as safety stock
        (SAFETY_MARGIN = {CONVENTIONAL_MARGIN}). Superseded: too low once supplier lateness was measured.
        -- docs/adr/0004-cycle-counts.md
        # ADR-0004: Cycle counts

        Status: Accepted

        Every bin is counted once a quarter; high-value bins once a month.
        -- docs/CONVENTIONS.md
        - Quantities are integers of the stocking unit; costs are Decimals, never floats.
        -- docs/CONVENTIONS.md
        - Lead times are in calendar days, including weekends.
        -- .agent/preferences.md
        - (review of #190) Sort purchase suggestions by code so diffs of the report stay stable.
        -- .agent/preferences.md
        - (review of #201) Do not reorder items flagged as discontinued, whatever the stock.
        -- .agent/past_fixes.md
        ## Duplicate purchase orders
        Symptom: two POs for one item. Fix: de-duplicate suggestions by item code before sending.
        """),
    )


SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes=SIZES, avoid=lambda v: tokens(fact_margin(v)),
                          tokens=lambda v, pct: tokens(pct))
GENERATOR = Family(FAMILY, "exploration-heavy", "the safety margin a stock service adds on top of "
                   "lead-time demand (a non-round percentage)", variants=(0, 1, 2), draw=fact_margin,
                   tell=SIZED.tell, tell_sized=SIZED.tell_sized, space=SPACE)
