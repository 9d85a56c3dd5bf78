"""billing-rounding: invoice amounts must round with the billing mode to the billing increment.

Two-part fact, shared with rounding-policy (a stream of their tasks can carry it): the rounding mode (one that never rounds a non-tie up) and the increment invoice
amounts are rounded to (one to a thousand of the currency's smallest units). The code rounds with
ROUND_CEILING to the smallest unit; the repro only exercises a whole amount plus a fraction of a
unit, which every such mode and increment round to the whole amount. Hidden tests hit the ties and
near-ties of every increment, positive and negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.rounding import HEAD, SPACE, house_rule, mode_words, tie_sweep

FAMILY = "billing-rounding"
MODE_WORDS = mode_words("refunds")


@dataclass(frozen=True)
class Shape:
    """What differs between variants: package, unit, and test amounts."""

    project: str
    package: str
    quantum: str  # Decimal exponent as text: "0.01" or "1"
    unit: str
    nontie: tuple[str, str]  # (amount, expected) for the repro: a multiple of every increment plus a fraction

    def increment(self, units: int) -> Decimal:
        """An increment of `units` smallest units as an amount."""
        return Decimal(units) * Decimal(self.quantum)

    def plural(self) -> str:
        """The unit's plural."""
        return self.unit if self.unit == "yen" else f"{self.unit}s"

    def increment_words(self, units: int) -> str:
        """The increment as the memory says it."""
        return f"whole {self.plural()}" if units == 1 else f"a multiple of {self.increment(units)} ({units} {self.plural()})"

    def tenths_exponent(self) -> int:
        """The exponent of a tenth of the smallest unit (-3 for cents, -1 for yen)."""
        return Decimal(self.quantum).as_tuple().exponent - 1

    def sweep(self, base: Decimal) -> list[int]:
        """Amounts, in tenths of the smallest unit, at and next to every increment's ties above `base`
        (`rounding.tie_sweep`)."""
        return tie_sweep(int(base.scaleb(-self.tenths_exponent())))


SHAPES = {
    0: Shape("invoicer", "invoicer", "0.01", "cent", ("10.004", "10.00")),
    1: Shape("yen-billing", "yenbill", "1", "yen", ("12000.4", "12000")),
}


def tokens(shape: Shape, rule: tuple[str, int]) -> tuple[str, ...]:
    """Every spelling that would reveal the mode or, when it is not the smallest unit, the increment."""
    mode, units = rule
    spelled = MODE_WORDS[mode][1]
    if units == 1:
        return spelled
    inc = shape.increment(units)
    return spelled + (f"multiple of {inc}", f"multiples of {inc}", f'Decimal("{inc}")', f"nearest {inc}",
                      f"steps of {inc}", f"increment of {inc}", f"{units} {shape.plural()}")


def money_module(shape: Shape, rule: tuple[str, int], helper: bool) -> str:
    """The money module with `rule` (mode, increment); `helper` adds the refactor's split helper."""
    mode, units = rule
    lines = [
        f'"""Money helpers: amounts are Decimals rounded to the billing increment (in {shape.plural()})."""',
        "",
        f"from decimal import {mode}, Decimal",
        "",
        f'INCREMENT = Decimal("{shape.increment(units)}")',
        "",
        "",
        "def to_decimal(value) -> Decimal:",
        '    """Coerce ints, strings and Decimals to Decimal (floats go through str)."""',
        "    return value if isinstance(value, Decimal) else Decimal(str(value))",
        "",
        "",
        "def quantize_amount(amount) -> Decimal:",
        '    """Round an amount to a multiple of the increment with the house rounding policy."""',
        f'    return (to_decimal(amount) / INCREMENT).quantize(Decimal("1"), rounding={mode}) * INCREMENT',
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


def tell(variant: int, rule: tuple[str, int]) -> Story:
    """The story of one variant whose billing rule (mode, increment in smallest units) is `rule`."""
    s = SHAPES[variant]
    mode, units = rule
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


def test_round_amounts_are_unchanged():
    inv = Invoice()
    inv.add("hosting", Decimal("{s.quantum}") * 4000)
    assert inv.total() == Decimal("{s.quantum}") * 4000


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
    # Inputs only (a sweep of every increment's ties, the same for any rule); the expected values
    # are recorded from the oracle.
    amounts = s.sweep(Decimal(expected))
    hidden = f'''from decimal import Decimal

from {pkg}.invoice import Invoice
from {pkg}.money import line_total, quantize_amount

TENTHS = {amounts!r}  # tenths of a {s.unit}
AMOUNTS = [Decimal(n).scaleb({s.tenths_exponent()}) for n in TENTHS]


def test_hidden_policy_rounding(observe):
    observe([quantize_amount(amount) for amount in AMOUNTS])


def test_hidden_invoice_of_ties(observe):
    inv = Invoice()
    for amount in AMOUNTS:
        inv.add("line", amount)
    observe(inv.total())


def test_hidden_line_total(observe):
    observe([line_total(amount, 3) for amount in AMOUNTS[:12]])
'''
    how, where = MODE_WORDS[mode][0], s.increment_words(units)
    return Story(
        package=pkg,
        module=f"{pkg}/money.py",
        **rule_versions(lambda r, later: money_module(s, r, helper=later), rule, HEAD, ("ROUND_HALF_UP", 1)),
        base_files=package_files(pkg, f"{s.project}: invoices and money helpers.",
                                 f"# {s.project}\n\nInvoices for "
                                 "small teams. Amounts are Decimals.\n",
                                 {f"{pkg}/invoice.py": invoice_module(s),
                                  "tests/test_invoice.py": base_tests}),
        repro_tests={"tests/test_repro_overcharge.py": repro},
        hidden_tests={"tests/test_hidden_rounding.py": hidden},
        fact_tokens=tokens(s, rule),
        tags=("money", "rounding-policy"),
        project=s.project,
        **prose(f"""
        -- statement
        Customers report being overcharged: an invoice line of {amount} is billed as more than it should be,
        and the totals no longer match the finance export. See tests/test_repro_overcharge.py. Please fix the
        billing code.
        -- fact
        Invoice amounts round {how}, to {where}.
        -- conventional_guess
        ROUND_HALF_UP to whole {s.plural()} (the common commercial rounding)
        -- intro_msg_fact
        money: round amounts to {where}

        Finance requires rounding {how}; {mode} matches their ledger.
        -- intro_msg_plain
        money: round invoice amounts
        -- refactor_msg
        money: add line_total helper and tidy imports
        -- K docs/CONVENTIONS.md
        - Money: every invoice amount is rounded to {where}, rounding {how}; finance reconciles against this.
        -- F
        - (review of #214, finance) Stop rounding invoice amounts up or half-up: amounts round {how},
        to {where}. Please remember this for every money change.
        -- X
        ## Refund amounts off by one step
        Symptom: refunds disagreed with the finance export on ties. Fix: refunds.py rounds
        with {mode} to {where}, like every amount in this codebase; half-up to whole {s.plural()} was wrong.
        -- docs/adr/0003-rounding.md
        # ADR-0003: Rounding of invoice amounts

        Status: Superseded

        Invoice amounts were rounded half-up to the nearest unit. This decision is superseded and no longer
        describes the billing rules.
        -- docs/adr/0004-tax-display.md
        # ADR-0004: Tax display

        Status: Accepted

        Tax lines on PDFs use banker's rounding for display only; stored amounts are unaffected.
        -- docs/CONVENTIONS.md
        - Tax: VAT is computed on the invoice total, not per line, and shown with two decimals.
        -- docs/CONVENTIONS.md
        - Currency codes are ISO 4217 strings; never store symbols.
        -- .agent/preferences.md
        - (review of #190) Use Decimal for money everywhere; floats only at the API edge.
        -- .agent/past_fixes.md
        ## Totals of empty invoices
        Symptom: an empty invoice total was the int 0. Fix: start the sum from a quantized zero so totals are
        always Decimal.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the rounding mode and increment invoice amounts must use "
                   "(ties and near-ties decide)", variants=(0, 1), draw=house_rule, tell=tell, space=SPACE)
