"""billing-rounding: invoice amounts must round half-down (ties toward the smaller amount).

The code rounds with ROUND_CEILING; the repro only exercises a non-tie amount, so half-up,
banker's rounding and truncation all pass it. Hidden tests hit ties and near-ties, where only
half-down gives the expected cents.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sdebench.generation.kit import ADR_DIR, CONVENTIONS, Story, assemble
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

FAMILY = "billing-rounding"
TOKENS = ("half-down", "half down", "half_down", "halfdown", "round_half_down", "ties go down",
          "ties toward the smaller", "ties to the smaller")


@dataclass(frozen=True)
class Shape:
    """What differs between variants: package, unit, and test amounts."""

    project: str
    package: str
    quantum: str  # Decimal exponent as text: "0.01" or "1"
    unit: str
    nontie: tuple[str, str]  # (amount, expected) for the repro: not a tie
    ties: tuple[tuple[str, str], ...]  # (amount, half-down result) ties and near-ties for hidden tests


SHAPES = {
    0: Shape("invoicer", "invoicer", "0.01", "cent", ("10.004", "10.00"),
             (("10.005", "10.00"), ("10.015", "10.01"), ("10.006", "10.01"), ("-3.125", "-3.12"))),
    1: Shape("yen-billing", "yenbill", "1", "yen", ("1200.4", "1200"),
             (("1200.5", "1200"), ("1201.5", "1201"), ("1200.6", "1201"), ("-77.5", "-77"))),
}


def money_module(shape: Shape, mode: str, helper: bool) -> str:
    """The money module with rounding `mode`; `helper` adds the refactor's split helper."""
    lines = [
        f'"""Money helpers: amounts are Decimals quantized to one {shape.unit}."""',
        "",
        f"from decimal import {mode}, Decimal",
        "",
        f'QUANTUM = Decimal("{shape.quantum}")',
        "",
        "",
        "def to_decimal(value) -> Decimal:",
        '    """Coerce ints, strings and Decimals to Decimal (floats go through str)."""',
        "    return value if isinstance(value, Decimal) else Decimal(str(value))",
        "",
        "",
        "def quantize_amount(amount) -> Decimal:",
        f'    """Quantize an amount to whole {shape.unit}s with the house rounding policy."""',
        f"    return to_decimal(amount).quantize(QUANTUM, rounding={mode})",
    ]
    if helper:
        lines += [
            "",
            "",
            "def line_total(unit_price, quantity) -> Decimal:",
            '    """The quantized total of one invoice line."""',
            "    return quantize_amount(to_decimal(unit_price) * to_decimal(quantity))",
        ]
    return "\n".join(lines) + "\n"


def invoice_module(shape: Shape) -> str:
    """The invoice module (unchanged by the bug)."""
    return f'''"""Invoices: a list of lines, each quantized, summed into a total."""

from dataclasses import dataclass, field

from {shape.package}.money import quantize_amount, to_decimal


@dataclass
class Invoice:
    """An invoice with (description, amount) lines."""

    lines: list = field(default_factory=list)

    def add(self, description: str, amount) -> None:
        """Add a line; the amount is quantized when the line is added."""
        if not description:
            raise ValueError("a line needs a description")
        self.lines.append((description, quantize_amount(to_decimal(amount))))

    def total(self):
        """The sum of the quantized lines."""
        return sum((amount for _, amount in self.lines), start=quantize_amount(0))
'''


def build_story(variant: int) -> tuple[Story, Shape]:
    """The story of one variant."""
    s = SHAPES[variant]
    pkg = s.package
    amount, expected = s.nontie
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.invoice import Invoice
from {pkg}.money import to_decimal


def test_to_decimal_keeps_decimals():
    assert to_decimal(Decimal("2.50")) == Decimal("2.50")


def test_to_decimal_from_float_goes_through_str():
    assert to_decimal(0.1) == Decimal("0.1")


def test_exact_amounts_are_unchanged():
    inv = Invoice()
    inv.add("hosting", Decimal("{s.quantum}") * 7)
    assert inv.total() == Decimal("{s.quantum}") * 7


def test_empty_description_rejected():
    with pytest.raises(ValueError):
        Invoice().add("", 1)
'''
    repro = f'''from decimal import Decimal

from {pkg}.invoice import Invoice
from {pkg}.money import quantize_amount


def test_line_is_not_overcharged():
    # Reported: an amount of {amount} is billed as more than {expected}.
    assert quantize_amount(Decimal("{amount}")) == Decimal("{expected}")


def test_invoice_total_matches_lines():
    inv = Invoice()
    inv.add("support", Decimal("{amount}"))
    assert inv.total() == Decimal("{expected}")
'''
    # Held-out checks spell out inputs only on their left side; the expected values (right side)
    # are dropped when the tests become observation tests, and recorded from the oracle instead.
    ties = "\n".join(f'    assert quantize_amount(Decimal("{a}")) == Decimal("{e}")' for a, e in s.ties)
    amounts = ", ".join(f'"{a}"' for a, _ in s.ties)
    total = sum(Decimal(e) for _, e in s.ties)
    hidden = f'''from decimal import Decimal

from {pkg}.invoice import Invoice
from {pkg}.money import line_total, quantize_amount

AMOUNTS = [{amounts}]


def test_hidden_policy_rounding():
{ties}


def test_hidden_invoice_of_ties():
    inv = Invoice()
    for amount in AMOUNTS:
        inv.add("line", Decimal(amount))
    assert inv.total() == Decimal("{total}")


def test_hidden_line_total():
    assert line_total(Decimal("{s.ties[0][0]}"), 1) == Decimal("{s.ties[0][1]}")
'''
    unit = s.unit
    fact_k = (CONVENTIONS, f"- Money: every invoice amount is quantized to whole {unit}s rounding half-down "
              f"(ties go down, toward the smaller amount); finance reconciles against this.")
    fact_f = (PREFERENCES, f"- (review of #214, finance) Stop rounding invoice amounts up or half-up: amounts round "
              f"half-down to the {unit}, ties go down. Please remember this for every money change.")
    fact_x = (PAST_FIXES, f"## Refund amounts off by one {unit}\nSymptom: refunds disagreed with the finance export by "
              f"one {unit} on ties. Fix: refunds.py quantizes with ROUND_HALF_DOWN, like every amount in this "
              f"codebase; half-up was wrong.")
    distractors = [
        (CONVENTIONS, "- Tax: VAT is computed on the invoice total, not per line, and shown with two decimals."),
        (CONVENTIONS, "- Currency codes are ISO 4217 strings; never store symbols."),
        (f"{ADR_DIR}/0003-rounding.md", "# ADR-0003: Rounding of invoice amounts\n\nStatus: Superseded\n\n"
         "Invoice amounts were rounded half-up to the nearest unit. This decision is superseded and no longer "
         "describes the billing rules."),
        (f"{ADR_DIR}/0004-tax-display.md", "# ADR-0004: Tax display\n\nStatus: Accepted\n\nTax lines on PDFs use "
         "banker's rounding for display only; stored amounts are unaffected."),
        (PREFERENCES, "- (review of #190) Use Decimal for money everywhere; floats only at the API edge."),
        (PAST_FIXES, "## Totals of empty invoices\nSymptom: an empty invoice total was the int 0. Fix: start the sum "
         "from a quantized zero so totals are always Decimal."),
    ]
    story = Story(
        package=pkg,
        module=f"{pkg}/money.py",
        v1_correct=money_module(s, "ROUND_HALF_DOWN", helper=False),
        v1_buggy=money_module(s, "ROUND_CEILING", helper=False),
        head_buggy=money_module(s, "ROUND_CEILING", helper=True),
        oracle=money_module(s, "ROUND_HALF_DOWN", helper=True),
        conventional=money_module(s, "ROUND_HALF_UP", helper=True),
        intro_msg_fact=f"money: quantize amounts half-down to the {unit}\n\nFinance requires ties to go down "
        "(toward the smaller amount); ROUND_HALF_DOWN matches their ledger.",
        intro_msg_plain=f"money: quantize amounts to the {unit}",
        refactor_msg="money: add line_total helper and tidy imports",
        base_files={
            f"{pkg}/__init__.py": f'"""{s.project}: invoices and money helpers."""\n',
            f"{pkg}/invoice.py": invoice_module(s),
            "tests/test_invoice.py": base_tests,
            "README.md": f"# {s.project}\n\nInvoices for small teams. Amounts are Decimals.\n",
        },
        repro_tests={"tests/test_repro_overcharge.py": repro},
        hidden_tests={"tests/test_hidden_rounding.py": hidden},
        fact_entries={"K": fact_k, "F": fact_f, "X": fact_x},
        distractors=distractors,
    )
    return story, s


class BillingRounding:
    """Generator of the billing-rounding family."""

    family = FAMILY
    bottleneck = "knowledge-missing"
    variants = (0, 1)
    description = "the rounding mode invoice amounts must use (ties and near-ties decide)"

    def build(self, variant: int, source: str):
        """Build one variant with the fact in `source`."""
        story, s = build_story(variant)
        amount, _ = s.nontie
        return assemble(
            story,
            family=FAMILY,
            variant=variant,
            source=source,
            bottleneck=self.bottleneck,
            project=s.project,
            statement=(
                f"Customers report being overcharged: an invoice line of {amount} is billed as more than it "
                f"should be, and the totals no longer match the finance export. "
                f"See tests/test_repro_overcharge.py. Please fix the billing code."
            ),
            fact=f"Invoice amounts round half-down to the whole {s.unit}: ties go toward the smaller amount.",
            fact_tokens=TOKENS,
            conventional_guess="ROUND_HALF_UP (the common commercial rounding)",
            tags=("money", "rounding-policy"),
            description=self.description,
        )


GENERATOR = BillingRounding()
