"""rounding-policy: one house rule, amounts round with a house mode to a house increment, in three codebases.

The variants are different projects (a journal, a VAT calculator, a payroll slip) whose rounding
module regressed to ROUND_CEILING at the cent. They share one fact, so a stream of their tasks can
carry it from one to the next: in the `none` placement the only way to know it is memory an agent
earned on an earlier task. Two-part fact: the rounding mode (one that never rounds a non-tie up)
and the increment amounts are rounded to (a cash increment: one cent up to ten units). The repro
uses a whole amount plus a fraction of a cent, which every such mode and increment round to the
whole amount; hidden tests hit the ties and near-ties of every increment, positive and negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.rounding import HEAD, SPACE, house_rule, mode_words, tie_sweep

FAMILY = "rounding-policy"
CENT = Decimal("0.01")
MODE_WORDS = mode_words("credits")


def increment(cents: int) -> Decimal:
    """An increment in cents as an amount (0.01, 0.05, 2.50, 10.00)."""
    return Decimal(cents) * CENT


def increment_words(cents: int) -> str:
    """The increment as the memory says it."""
    return "the cent" if cents == 1 else f"a multiple of {increment(cents)} ({cents} cents)"


def tokens(fact: tuple[str, int]) -> tuple[str, ...]:
    """Every spelling that would reveal the mode or, when it is not the cent, the increment."""
    mode, cents = fact
    spelled = MODE_WORDS[mode][1]
    if cents == 1:
        return spelled
    inc = increment(cents)
    return spelled + (f"multiple of {inc}", f"multiples of {inc}", f'Decimal("{inc}")', f"nearest {inc}",
                      f"steps of {inc}", f"increment of {inc}", f"{inc} increment", f"{cents} cents")


def sweep(base: Decimal) -> list[int]:
    """Amounts, in thousandths, at and next to every increment's ties (`rounding.tie_sweep`)."""
    return tie_sweep(base)


@dataclass(frozen=True)
class Shape:
    """What differs between variants: project, names, and test amounts."""

    project: str
    package: str
    module: str  # the rounding module's name inside the package
    func: str  # the rounding function
    consumer: str  # the module that uses it
    cls: str  # the consumer's class
    noun: str  # what the class holds, e.g. "posting"
    area: str  # who reports, e.g. "the accountants"
    nontie: tuple[str, str]  # (amount, expected): a multiple of every increment plus a fraction of a cent


SHAPES = {
    0: Shape("journal-book", "journal", "amounts", "round_posting", "entries", "Entry", "posting", "the accountants",
             ("2500.004", "2500.00")),
    1: Shape("vat-calc", "vatcalc", "money", "round_tax", "returns", "TaxReturn", "tax line", "the tax office export",
             ("700.003", "700.00")),
    2: Shape("payslip", "payslip", "cents", "round_pay", "slip", "Payslip", "pay item", "the payroll auditors",
             ("1830.002", "1830.00")),
}


def rounding_module(s: Shape, rule: tuple[str, int], helper: bool) -> str:
    """The rounding module with `rule` (mode, increment in cents); `helper` adds the refactor's product helper."""
    mode, cents = rule
    lines = [
        '"""Amounts are Decimals rounded to a multiple of the house increment."""',
        "",
        f"from decimal import {mode}, Decimal",
        "",
        f'INCREMENT = Decimal("{increment(cents)}")',
        "",
        "",
        "def as_decimal(value) -> Decimal:",
        '    """Coerce ints, strings and Decimals to Decimal (floats go through str)."""',
        "    return value if isinstance(value, Decimal) else Decimal(str(value))",
        "",
        "",
        f"def {s.func}(amount) -> Decimal:",
        '    """Round an amount to a multiple of the increment with the house rounding policy."""',
        f'    return (as_decimal(amount) / INCREMENT).quantize(Decimal("1"), rounding={mode}) * INCREMENT',
    ]
    if helper:
        lines += [
            "",
            "",
            "def rounded_product(price, quantity) -> Decimal:",
            '    """The quantized product of a price and a quantity."""',
            f"    return {s.func}(as_decimal(price) * as_decimal(quantity))",
        ]
    return "\n".join(lines) + "\n"


def consumer_module(s: Shape) -> str:
    """The module that holds quantized amounts (unchanged by the bug)."""
    return f'''"""{s.cls}: a list of {s.noun}s, each quantized, summed into a total."""

from dataclasses import dataclass, field

from {s.package}.{s.module} import as_decimal, {s.func}


@dataclass
class {s.cls}:
    """Labelled {s.noun}s."""

    items: list = field(default_factory=list)

    def add(self, label: str, amount) -> None:
        """Add a {s.noun}; the amount is quantized when it is added."""
        if not label:
            raise ValueError("a {s.noun} needs a label")
        self.items.append((label, {s.func}(as_decimal(amount))))

    def total(self):
        """The sum of the quantized {s.noun}s."""
        return sum((amount for _, amount in self.items), start={s.func}(0))
'''


def tell(variant: int, rule: tuple[str, int]) -> Story:
    """The story of one variant whose house rule (mode, increment in cents) is `rule`."""
    s = SHAPES[variant]
    mode, cents = rule
    pkg, mod, func, cls = s.package, s.module, s.func, s.cls
    amount, expected = s.nontie
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.{s.consumer} import {cls}
from {pkg}.{mod} import as_decimal


def test_as_decimal_keeps_decimals():
    assert as_decimal(Decimal("2.50")) == Decimal("2.50")


def test_as_decimal_from_float_goes_through_str():
    assert as_decimal(0.1) == Decimal("0.1")


def test_round_amounts_are_unchanged():
    doc = {cls}()
    doc.add("a", Decimal("40.00"))
    assert doc.total() == Decimal("40.00")


def test_empty_label_rejected():
    with pytest.raises(ValueError):
        {cls}().add("", 1)
'''
    repro = f'''from decimal import Decimal

from {pkg}.{s.consumer} import {cls}
from {pkg}.{mod} import {func}


def test_amount_is_not_rounded_up():
    # Reported: {amount} comes out above {expected}.
    assert {func}(Decimal("{amount}")) == Decimal("{expected}")


def test_total_matches_items():
    doc = {cls}()
    doc.add("item", Decimal("{amount}"))
    assert doc.total() == Decimal("{expected}")
'''
    # Inputs only (a sweep of every increment's ties, the same for any rule); the expected values
    # are recorded from the oracle.
    amounts = sweep(int(Decimal(expected) * 1000))
    hidden = f'''from decimal import Decimal

from {pkg}.{s.consumer} import {cls}
from {pkg}.{mod} import {func}, rounded_product

THOUSANDTHS = {amounts!r}
AMOUNTS = [Decimal(n).scaleb(-3) for n in THOUSANDTHS]


def test_hidden_policy_rounding(observe):
    observe([{func}(amount) for amount in AMOUNTS])


def test_hidden_total_of_ties(observe):
    doc = {cls}()
    for amount in AMOUNTS:
        doc.add("x", amount)
    observe(doc.total())


def test_hidden_product(observe):
    observe([rounded_product(amount, 3) for amount in AMOUNTS[:12]])
'''
    how, where = MODE_WORDS[mode][0], increment_words(cents)
    return Story(
        package=pkg,
        module=f"{pkg}/{mod}.py",
        **rule_versions(lambda r, later: rounding_module(s, r, helper=later), rule, HEAD,
                        ("ROUND_HALF_UP", 1)),
        base_files=package_files(pkg, f"{s.project}: {s.noun}s and amounts.",
                                 f"# {s.project}\n\nSmall {s.noun} "
                                 "bookkeeping. Amounts are Decimals.\n",
                                 {f"{pkg}/{s.consumer}.py": consumer_module(s),
                                  f"tests/test_{s.consumer}.py": base_tests}),
        repro_tests={"tests/test_repro_rounding.py": repro},
        hidden_tests={"tests/test_hidden_rounding.py": hidden},
        fact_tokens=tokens(rule),
        tags=("money", "rounding-policy", "shared-fact"),
        project=s.project,
        **prose(f"""
        -- statement
        {s.area[0].upper()}{s.area[1:]} report amounts rounded up: {amount} comes out above {expected}, and
        totals no longer reconcile. See tests/test_repro_rounding.py. Please fix the {s.package} code.
        -- fact
        Amounts round {how}, to {where}.
        -- conventional_guess
        ROUND_HALF_UP to the cent (the common commercial rounding)
        -- intro_msg_fact
        {mod}: round amounts to {where}

        Finance requires rounding {how}.
        -- intro_msg_plain
        {mod}: round amounts
        -- refactor_msg
        {mod}: add rounded_product helper
        -- K docs/CONVENTIONS.md
        - Money: every amount is rounded to {where}, rounding {how}; reconciliation depends on it.
        -- F
        - (review of #57, finance) Amounts must not round up or half-up: they round {how}, to {where}. Please
        remember this for every money change.
        -- X
        ## Credit notes off by one step
        Symptom: credit notes disagreed with the export on ties. Fix: round with {mode} to {where}, like every
        amount here; half-up to the cent was wrong.
        -- docs/adr/0003-rounding.md
        # ADR-0003: Rounding of amounts

        Status: Superseded

        Amounts were rounded half-up to the nearest cent. This decision is superseded and no longer describes
        the rules.
        -- docs/CONVENTIONS.md
        - Amounts are stored as Decimal strings; never as floats.
        -- docs/CONVENTIONS.md
        - Currency is implied by the deployment; amounts carry no currency code.
        -- .agent/preferences.md
        - (review of #49) Name money variables after what they hold (net, gross, fee).
        -- .agent/past_fixes.md
        ## Totals of empty documents
        Symptom: an empty total was the int 0. Fix: start the sum from a rounded zero so totals are always
        Decimal.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the house rounding mode and increment for amounts, shared "
                   "by three codebases (ties and near-ties decide)", variants=(0, 1, 2), draw=house_rule,
                   tell=tell, space=SPACE)
