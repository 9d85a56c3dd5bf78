"""rounding-policy: one house rule, amounts round half-down to the cent, in three codebases.

The variants are different projects (a journal, a VAT calculator, a payroll slip) whose rounding
module regressed to ROUND_CEILING. They share one fact, so a stream of their tasks can carry it
from one to the next: in the `none` placement the only way to know it is memory an agent earned
on an earlier task. The repro uses a non-tie amount (half-up, banker's and truncation all pass);
hidden tests hit ties and near-ties, where only half-down gives the expected cents.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sdebench.generation.kit import ADR_DIR, CONVENTIONS, Story, assemble
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

FAMILY = "rounding-policy"
# The same spellings as billing-rounding: the fact is the same house rule.
TOKENS = ("half-down", "half down", "half_down", "halfdown", "round_half_down", "ties go down",
          "ties toward the smaller", "ties to the smaller")


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
    nontie: tuple[str, str]  # (amount, expected): not a tie
    ties: tuple[tuple[str, str], ...]  # (amount, half-down result)


SHAPES = {
    0: Shape("journal-book", "journal", "amounts", "round_posting", "entries", "Entry", "posting", "the accountants",
             ("25.004", "25.00"), (("25.005", "25.00"), ("25.015", "25.01"), ("25.006", "25.01"), ("-4.125", "-4.12"))),
    1: Shape("vat-calc", "vatcalc", "money", "round_tax", "returns", "TaxReturn", "tax line", "the tax office export",
             ("7.301", "7.30"), (("7.305", "7.30"), ("7.315", "7.31"), ("7.306", "7.31"), ("-0.245", "-0.24"))),
    2: Shape("payslip", "payslip", "cents", "round_pay", "slip", "Payslip", "pay item", "the payroll auditors",
             ("1830.112", "1830.11"), (("1830.115", "1830.11"), ("1830.125", "1830.12"), ("1830.116", "1830.12"),
                                        ("-12.335", "-12.33"))),
}


def rounding_module(s: Shape, mode: str, helper: bool) -> str:
    """The rounding module with `mode`; `helper` adds the refactor's product helper."""
    lines = [
        '"""Amounts are Decimals quantized to the cent."""',
        "",
        f"from decimal import {mode}, Decimal",
        "",
        'CENT = Decimal("0.01")',
        "",
        "",
        "def as_decimal(value) -> Decimal:",
        '    """Coerce ints, strings and Decimals to Decimal (floats go through str)."""',
        "    return value if isinstance(value, Decimal) else Decimal(str(value))",
        "",
        "",
        f"def {s.func}(amount) -> Decimal:",
        '    """Quantize an amount to the cent with the house rounding policy."""',
        f"    return as_decimal(amount).quantize(CENT, rounding={mode})",
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


def build_story(variant: int) -> tuple[Story, Shape]:
    """The story of one variant."""
    s = SHAPES[variant]
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


def test_whole_cents_are_unchanged():
    doc = {cls}()
    doc.add("a", Decimal("3.07"))
    assert doc.total() == Decimal("3.07")


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
    # Expected values only right of each assert (dropped from the held-out observation tests).
    checks = "\n".join(f'    assert {func}(Decimal("{a}")) == Decimal("{e}")' for a, e in s.ties)
    amounts = ", ".join(f'"{a}"' for a, _ in s.ties)
    total = sum(Decimal(e) for _, e in s.ties)
    hidden = f'''from decimal import Decimal

from {pkg}.{s.consumer} import {cls}
from {pkg}.{mod} import {func}, rounded_product

AMOUNTS = [{amounts}]


def test_hidden_policy_rounding():
{checks}


def test_hidden_total_of_ties():
    doc = {cls}()
    for amount in AMOUNTS:
        doc.add("x", Decimal(amount))
    assert doc.total() == Decimal("{total}")


def test_hidden_product():
    assert rounded_product(Decimal("{s.ties[0][0]}"), 1) == Decimal("{s.ties[0][1]}")
'''
    fact_k = (CONVENTIONS, "- Money: every amount is quantized to the cent rounding half-down (ties go down, "
              "toward the smaller amount); reconciliation depends on it.")
    fact_f = (PREFERENCES, "- (review of #57, finance) Amounts must not round up or half-up: they round half-down "
              "to the cent, ties go down. Please remember this for every money change.")
    fact_x = (PAST_FIXES, "## Credit notes off by one cent\nSymptom: credit notes disagreed with the export by one "
              "cent on ties. Fix: quantize with ROUND_HALF_DOWN, like every amount here; half-up was wrong.")
    distractors = [
        (CONVENTIONS, "- Amounts are stored as Decimal strings; never as floats."),
        (CONVENTIONS, "- Currency is implied by the deployment; amounts carry no currency code."),
        (f"{ADR_DIR}/0003-rounding.md", "# ADR-0003: Rounding of amounts\n\nStatus: Superseded\n\nAmounts were "
         "rounded half-up to the nearest cent. This decision is superseded and no longer describes the rules."),
        (PREFERENCES, "- (review of #49) Name money variables after what they hold (net, gross, fee)."),
        (PAST_FIXES, "## Totals of empty documents\nSymptom: an empty total was the int 0. Fix: start the sum from "
         "a quantized zero so totals are always Decimal."),
    ]
    story = Story(
        package=pkg,
        module=f"{pkg}/{mod}.py",
        v1_correct=rounding_module(s, "ROUND_HALF_DOWN", helper=False),
        v1_buggy=rounding_module(s, "ROUND_CEILING", helper=False),
        head_buggy=rounding_module(s, "ROUND_CEILING", helper=True),
        oracle=rounding_module(s, "ROUND_HALF_DOWN", helper=True),
        conventional=rounding_module(s, "ROUND_HALF_UP", helper=True),
        intro_msg_fact=f"{mod}: quantize amounts half-down to the cent\n\nFinance requires ties to go down "
        "(toward the smaller amount).",
        intro_msg_plain=f"{mod}: quantize amounts to the cent",
        refactor_msg=f"{mod}: add rounded_product helper",
        base_files={
            f"{pkg}/__init__.py": f'"""{s.project}: {s.noun}s and amounts."""\n',
            f"{pkg}/{s.consumer}.py": consumer_module(s),
            f"tests/test_{s.consumer}.py": base_tests,
            "README.md": f"# {s.project}\n\nSmall {s.noun} bookkeeping. Amounts are Decimals.\n",
        },
        repro_tests={"tests/test_repro_rounding.py": repro},
        hidden_tests={"tests/test_hidden_rounding.py": hidden},
        fact_entries={"K": fact_k, "F": fact_f, "X": fact_x},
        distractors=distractors,
    )
    return story, s


class RoundingPolicy:
    """Generator of the rounding-policy family."""

    family = FAMILY
    bottleneck = "knowledge-missing"
    variants = (0, 1, 2)
    description = "the house rounding mode for amounts, shared by three codebases (ties and near-ties decide)"

    def build(self, variant: int, source: str):
        """Build one variant with the fact in `source`."""
        story, s = build_story(variant)
        amount, expected = s.nontie
        return assemble(
            story,
            family=FAMILY,
            variant=variant,
            source=source,
            bottleneck=self.bottleneck,
            project=s.project,
            statement=(
                f"{s.area[0].upper()}{s.area[1:]} report amounts rounded up: {amount} comes out above {expected}, "
                f"and totals no longer reconcile. See tests/test_repro_rounding.py. Please fix the {s.package} code."
            ),
            fact="Amounts round half-down to the cent: ties go toward the smaller amount.",
            fact_tokens=TOKENS,
            conventional_guess="ROUND_HALF_UP (the common commercial rounding)",
            tags=("money", "rounding-policy", "shared-fact"),
            description=self.description,
        )


GENERATOR = RoundingPolicy()
