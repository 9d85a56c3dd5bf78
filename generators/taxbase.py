"""taxbase: sales tax at an unusual rate, computed on a base that is itself rounded down first.

Two-part fact: the tax rate (one decimal, never .0/.5, never a real well-known rate) and the
step the taxable base is rounded down to before the rate applies (whole currency units or
tenths). HEAD taxes the exact base at a far too high rate; the repro only bounds the tax on a
round base, which a round conventional rate also satisfies. Hidden tests pin the rate on that
round base and the base rule on a fixed sweep of bases with fractions (the same whatever the fact).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

from sdebench.generation.facts import accepted, draw_integer, space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "taxbase"
CENT = Decimal("0.01")
HEAD_RATE = "0.19"
CONV_RATE = "0.08"
AVOID_RATES = (77, 81, 75, 80, 70, 90, 60, 65, 85, 95)  # tenths of a percent: real or round rates


@dataclass(frozen=True)
class Shape:
    """What differs between variants: the domain, names and currency."""

    project: str
    package: str
    module: str
    func: str
    thing: str  # what is taxed
    unit: str  # the currency unit
    extra: str  # the second component of the base
    base_desc: str


SHAPES = {
    0: Shape("alpcart", "alpcart", "tax", "order_tax", "order", "franc", "shipping", "goods plus shipping"),
    1: Shape("innfolio", "innfolio", "levy", "folio_tax", "folio", "euro", "extras", "room nights plus extras"),
}


STEPS = ("1", "0.1")  # the base rounded down to whole units or tenths


def drawable(tenths: int) -> bool:
    """Whether the draw may return a rate of `tenths` tenths of a percent."""
    return bool(tenths % 5) and tenths not in AVOID_RATES


def fact_of(variant: int) -> tuple[Decimal, str]:
    """The rate as a fraction (e.g. 0.073) and the base step ('1' or '0.1')."""
    tenths = draw_integer(f"{FAMILY}-rate-{variant}", 61, 99, drawable)
    flip = random.Random(f"{FAMILY}-step").random() < 0.5
    return Decimal(tenths) / 1000, STEPS[(variant % 2) ^ flip]


def rate(tenths: int) -> Decimal:
    """A rate of `tenths` tenths of a percent, as the draw spells it."""
    return Decimal(tenths) / 1000


# Rule 7: the well-known and round rates on the exact base first; then every drawable pair; then every
# rate of 0.1..9.9 % (the repro rules out 10 % and more) with the exact base or either step.
SPACE = space([(rate(t), None) for t in (80, *AVOID_RATES, 50, 25)],
              [(rate(t), step) for t in accepted(61, 99, drawable) for step in STEPS],
              [(rate(t), step) for t, step in itertools.product(range(1, 100), (None, *STEPS))])


def tax(base: Decimal, rate: Decimal, step: str | None) -> Decimal:
    """Tax on `base`, the base first rounded down to `step` when given."""
    if step is not None:
        base = base.quantize(Decimal(step), rounding=ROUND_FLOOR)
    return (base * rate).quantize(CENT, rounding=ROUND_HALF_UP)


def sweep_cases(variant: int, count: int = 12) -> list[tuple[Decimal, Decimal]]:
    """(goods, extra) pairs with fractional bases the hidden tests tax: drawn per variant, never from the fact."""
    rng = random.Random(f"{FAMILY}-sweep-{variant}")
    return [(Decimal(rng.randint(5_000, 40_000)) / 100, Decimal(rng.randint(100, 2_000)) / 100) for _ in range(count)]


def rule_module(s: Shape, rate: str, step: str | None, helper: bool) -> str:
    """The tax module; `step` rounds the base down first; `helper` adds the refactor's total()."""
    imports = "ROUND_FLOOR, ROUND_HALF_UP, Decimal" if step else "ROUND_HALF_UP, Decimal"
    base_line = "    return base.quantize(BASE_STEP, rounding=ROUND_FLOOR)" if step else "    return base"
    step_line = f'BASE_STEP = Decimal("{step}")\n' if step else ""
    text = f'''"""Tax on a {s.thing}: the rate applies to the taxable base ({s.base_desc})."""

from decimal import {imports}

CENT = Decimal("0.01")
TAX_RATE = Decimal("{rate}")
{step_line}

def taxable_base({s.thing}) -> Decimal:
    """The base the rate applies to: {s.base_desc}."""
    base = {s.thing}.subtotal() + {s.thing}.{s.extra}
{base_line}


def {s.func}({s.thing}) -> Decimal:
    """The tax due on a {s.thing}, to the cent."""
    return (taxable_base({s.thing}) * TAX_RATE).quantize(CENT, rounding=ROUND_HALF_UP)
'''
    if helper:
        text += f'''

def total_due({s.thing}) -> Decimal:
    """What the customer pays: the base components plus the tax."""
    return {s.thing}.subtotal() + {s.thing}.{s.extra} + {s.func}({s.thing})
'''
    return text


def model_module(s: Shape) -> str:
    """The order/folio record (unchanged by the bug)."""
    cls = s.thing.capitalize()
    return f'''"""The {s.thing} record: priced lines plus {s.extra}."""

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass
class {cls}:
    """Lines of (description, unit price, quantity) and the {s.extra} charge."""

    lines: list = field(default_factory=list)
    {s.extra}: Decimal = Decimal("0.00")

    def add(self, description: str, price, quantity: int = 1) -> None:
        """Add a priced line."""
        if quantity < 1:
            raise ValueError(f"quantity must be positive, got {{quantity}}")
        self.lines.append((description, Decimal(str(price)), quantity))

    def subtotal(self) -> Decimal:
        """The sum of price x quantity over the lines."""
        return sum((price * qty for _, price, qty in self.lines), start=Decimal("0.00"))
'''


def display_module(s: Shape) -> str:
    """A receipt formatting helper (filler, unrelated to the bug)."""
    return '''"""Formatting of amounts on receipts."""

from decimal import Decimal


def money(amount) -> str:
    """An amount with two places and a thousands separator, e.g. 1,234.50."""
    return f"{Decimal(amount):,.2f}"
'''


def tokens(rate: Decimal, step: str | None, unit: str) -> tuple[str, ...]:
    """Every spelling that would reveal the rate or the base rule."""
    pct = f"{rate * 100:.1f}"
    rate_t = (pct, pct.replace(".", ","), f"{rate * 100:.2f}", f"{rate:.3f}", f"{rate:.4f}")
    rule = ("rounded down", "round down", "rounds down", "round_floor", "round_down", "floor", "truncated",
            "truncate", "base_step")
    if step is None:
        return rate_t
    if step == "1":
        rule += (f"whole {unit}", f"whole {unit}s", "whole units", "whole currency")
    else:
        rule += ("tenth", "tenths", "0.1", "0.10", "ten cents", "10 cents")
    return rate_t + rule


def step_words(step: str | None, unit: str) -> str:
    """What the base is rounded down to."""
    return {"1": f"whole {unit}s", "0.1": f"tenths of a {unit}", None: "nothing (the exact base)"}[step]


def tell(variant: int, fact: tuple[Decimal, str | None]) -> Story:
    """The story of one variant whose (rate, base step) is `fact`."""
    s = SHAPES[variant]
    rate, step = fact
    cases = sweep_cases(variant)
    pkg, cls, thing = s.package, s.thing.capitalize(), s.thing
    pct = f"{rate * 100:.1f}%"
    words = step_words(step, s.unit)
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.model import {cls}
from {pkg}.{s.module} import {s.func}


def test_subtotal_sums_lines():
    {thing} = {cls}()
    {thing}.add("a", "12.50", 2)
    {thing}.add("b", "3.25")
    assert {thing}.subtotal() == Decimal("28.25")


def test_quantity_must_be_positive():
    with pytest.raises(ValueError):
        {cls}().add("a", "1.00", 0)


def test_empty_{thing}_has_no_tax():
    assert {s.func}({cls}()) == Decimal("0.00")
'''
    repro = f'''from decimal import Decimal

from {pkg}.model import {cls}
from {pkg}.{s.module} import {s.func}, total_due


def test_tax_is_not_overcharged():
    # Reported: a {thing} worth 100.00 was charged 19.00 tax; the published rate is single-digit.
    {thing} = {cls}()
    {thing}.add("item", "100.00")
    assert {s.func}({thing}) < Decimal("10.00")


def test_total_due_is_not_overcharged():
    {thing} = {cls}()
    {thing}.add("item", "100.00")
    assert total_due({thing}) < Decimal("110.00")
'''
    at_round = tax(Decimal("100.00"), rate, step)
    pairs = [(str(g), str(e)) for g, e in cases]
    at_frac = [tax(g + e, rate, step) for g, e in cases]
    due = [g + e + t for (g, e), t in zip(cases, at_frac, strict=True)]
    hidden = f'''from decimal import Decimal

from {pkg}.model import {cls}
from {pkg}.{s.module} import {s.func}, total_due


def _make(goods, extra):
    {thing} = {cls}()
    {thing}.add("item", goods)
    {thing}.{s.extra} = Decimal(extra)
    return {thing}


def test_hidden_published_rate():
    assert {s.func}(_make("100.00", "0.00")) == Decimal("{at_round}")


def test_hidden_base_rule():
    assert [{s.func}(_make(goods, extra)) for goods, extra in {pairs!r}] == [{", ".join(f'Decimal("{t}")' for t in at_frac)}]


def test_hidden_total_due():
    assert [total_due(_make(goods, extra)) for goods, extra in {pairs!r}] == [{", ".join(f'Decimal("{t}")' for t in due)}]
'''
    article = "an" if s.thing[0] in "aeiou" else "a"
    return Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        **rule_versions(lambda rule, later: rule_module(s, *rule, helper=later), (str(rate), step),
                        (HEAD_RATE, None), (CONV_RATE, None)),
        base_files=package_files(pkg, f"{s.project}: {thing}s and their tax.",
                                 f"# {s.project}\n\n{cls}s with priced "
                                 f"lines, {s.extra} and tax.\n",
                                 {f"{pkg}/model.py": model_module(s), "tests/test_model.py": base_tests}),
        repro_tests={"tests/test_repro_tax.py": repro},
        hidden_tests={"tests/test_hidden_tax.py": hidden},
        filler=[Commit("display: format amounts for receipts", {f"{pkg}/display.py": display_module(s)})],
        fact_tokens=tokens(rate, step, s.unit),
        tags=("money", "tax", "multi-part-rule"),
        project=s.project,
        **prose(f"""
        -- statement
        The tax on our {s.thing}s is wrong: {article} {s.thing} worth 100.00 shows 19.00 of tax, and our tax
        advisor says the amounts on several recent {s.thing}s do not match what we declare.
        tests/test_repro_tax.py has a reproduction.
        -- fact
        Tax is {rate * 100:.1f}% of the taxable base, the base first rounded down to {words}.
        -- conventional_guess
        TAX_RATE = {CONV_RATE} on the exact base
        -- intro_msg_fact
        {s.module}: compute tax on {thing}s

        The rate is {pct}; the taxable base is rounded down to {words} before the rate applies, as the tax
        office requires.
        -- intro_msg_plain
        {s.module}: compute tax on {thing}s
        -- refactor_msg
        {s.module}: add total_due; simplify the base computation
        -- K docs/CONVENTIONS.md
        - Tax: the rate is {pct}. It applies to the taxable base ({s.base_desc}) after the base is rounded
        down to {words}; the tax itself then rounds half-up to the cent.
        -- F
        - (review of #301, tax advisor) Our rate is {pct}, not a round number, and the taxable base is rounded
        down to {words} before the rate is applied (not the tax).
        -- X
        ## Credit notes disagreed with the tax return
        Symptom: credit notes reversed a different tax than the return showed. Fix: credit_notes.py now rounds
        the base down to {words} first and then applies {pct}, exactly as {thing}s do.
        -- docs/adr/0003-tax-rate.md
        # ADR-0003: Tax rate

        Status: Superseded

        Tax was {Decimal(CONV_RATE) * 100:.0f}% of the exact base, rounded half-up to the cent. Superseded
        when the rate changed; kept for old invoices.
        -- docs/adr/0004-exempt-lines.md
        # ADR-0004: Exempt lines

        Status: Accepted

        Gift cards are not lines of a taxable sale; they are sold through a separate flow.
        -- docs/CONVENTIONS.md
        - Prices are entered and stored tax-exclusive; the {thing} page shows tax separately.
        -- docs/CONVENTIONS.md
        - Money is Decimal everywhere; never construct a Decimal from a float.
        -- .agent/preferences.md
        - (review of #277) Name tax helpers after what they return, e.g. `taxable_base`.
        -- .agent/preferences.md
        - (review of #289) Show the tax line even when it is zero.
        -- .agent/past_fixes.md
        ## Tax line missing on zero-rated exports
        Symptom: export invoices had no tax line. Fix: always render the line, with a zero amount.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "an unusual tax rate and the step the taxable base is "
                   "rounded down to before the rate applies (two-part rule)", variants=(0, 1), draw=fact_of,
                   tell=tell, space=SPACE)
