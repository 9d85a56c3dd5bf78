"""promo-stacking: how several percentage discounts combine, deep below the checkout total.

The repro calls checkout (checkout), which resolves the codes to percentages (promotions), which
asks the stacking helper (stacking) for the combined rate; the rule lives there. At HEAD only the
first discount counts. The house rule has two parts, split across two entries of its source:
discounts compound (each applies to the already-discounted amount) and the combined discount is
capped at a non-round share of the subtotal. The repro only checks that a second code lowers the
total, which the conventional fix (add the percentages up) also does; hidden tests probe the
compounding below the cap and the cap itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, noted_commit, pick_distinct
from sdebench.generation.parts import package_files, state_versions
from sdebench.generation.prose import prose

FAMILY = "promo-stacking"
# Caps in tenths of a percent: above the largest compounded case the hidden tests keep below the
# cap (15% and 20%: 32%) and below three 20% codes (48.8%), never a multiple of half a percent.
CAPS = tuple(n for n in range(331, 488) if n % 5)
UNCAPPED = 1000  # 100.0%
COMPOUND_TOKENS = ("compound", "compounds", "compounded", "compounding", "multiplicative", "multiplicatively",
                   "already-discounted", "already discounted", "one after another", "one after the other")


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names, codes and the drawn cap."""

    project: str
    package: str
    noun: str  # promo code / voucher
    codes: dict[str, int]  # code -> percent
    mode: str  # "compound" (the house rule) or "add"
    cap: int  # tenths of a percent


def fact_rule(variant: int) -> tuple[str, int]:
    """The rule of a variant: discounts compound, capped at a drawn share (tenths of a percent)."""
    return "compound", pick_distinct(f"{FAMILY}-cap", list(CAPS), 2)[variant]


# Adding the percentages up (capped at 100%) first; then every drawable rule; then the neighbours:
# compounding uncapped or capped at a whole or half percent of 30..50, adding up under a round cap.
SPACE = space([("add", UNCAPPED)], [("compound", c) for c in CAPS],
              [("compound", UNCAPPED)] + [("compound", c) for c in range(300, 505, 5)]
              + [("add", c) for c in range(300, 505, 50)])


def shape(variant: int, rule: tuple[str, int]) -> Shape:
    """The names of a variant with the stacking rule `rule`."""
    mode, cap = rule
    if variant == 0:
        return Shape("tillkit", "tillkit", "promo code",
                     {"SPRING10": 10, "WELCOME15": 15, "STAFF20": 20, "BULK20": 20, "VIP20": 20}, mode, cap)
    return Shape("cartwise", "cartwise", "voucher",
                 {"NEWS10": 10, "FRIEND15": 15, "CREW20": 20, "TRADE20": 20, "GOLD20": 20}, mode, cap)


def percent(cap: int) -> str:
    """A cap in tenths of a percent as a percentage: 374 -> 37.4."""
    return str(Decimal(cap) / 10)


def rate(cap: int) -> str:
    """A cap in tenths of a percent as a share: 374 -> 0.374."""
    return str(Decimal(cap) / 1000)


def token_parts(s: Shape) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The spellings of each part of the rule: compounding, then the cap."""
    c = percent(s.cap)
    return COMPOUND_TOKENS, (f"{c}%", f"{c} %", f"{c} percent", f"{c} per cent", rate(s.cap), f"{s.cap}/1000")


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal either part of the rule."""
    compound, cap = token_parts(s)
    return compound + cap


def stacking(s: Shape, state: str, helper: bool) -> str:
    """The stacking module; state is correct, buggy, conventional or oracle."""
    lines = [
        '"""Combine the percentage discounts of one basket into a single rate."""',
        "",
        "from decimal import Decimal",
        "",
        'ONE = Decimal("1")',
        'HUNDRED = Decimal("100")',
    ]
    if state in ("correct", "oracle"):
        lines += [f'MAX_RATE = Decimal("{rate(s.cap)}")']
    lines += [
        "",
        "",
        "def combined_rate(percents):",
        '    """The share of the subtotal taken off by the given whole-number percentages."""',
        "    if not percents:",
        "        return Decimal(0)",
    ]
    if state in ("correct", "oracle") and s.mode == "add":
        lines += ["    return min(sum(Decimal(p) for p in percents) / HUNDRED, MAX_RATE)"]
    elif state in ("correct", "oracle"):
        lines += [
            "    remaining = ONE",
            "    for p in percents:",
            "        remaining *= ONE - Decimal(p) / HUNDRED",
            "    return min(ONE - remaining, MAX_RATE)",
        ]
    elif state == "conventional":
        lines += ["    return min(sum(Decimal(p) for p in percents) / HUNDRED, ONE)"]
    else:
        lines += ["    return Decimal(percents[0]) / HUNDRED"]
    if helper:
        lines += ["", "", "def describe(rate):", '    """A rate as a label for the receipt."""',
                  '    return f"-{(rate * HUNDRED).normalize():f}%"']
    return "\n".join(lines) + "\n"


def promotions(s: Shape) -> str:
    """The promotions module: resolves codes and applies the combined rate."""
    catalog = "\n".join(f'    "{k}": {v},' for k, v in s.codes.items())
    return f'''"""{s.noun.capitalize()}s: resolve them to percentages and take the discount off a subtotal."""

from decimal import ROUND_HALF_UP, Decimal

from {s.package}.stacking import combined_rate

CENT = Decimal("0.01")
CATALOG = {{
{catalog}
}}


def resolve(codes):
    """The percentages of the given {s.noun}s, each counted once, in the order given."""
    out = []
    for code in dict.fromkeys(c.strip().upper() for c in codes):
        if code not in CATALOG:
            raise KeyError(f"unknown {s.noun} {{code!r}}")
        out.append(CATALOG[code])
    return out


def discount_for(subtotal, codes):
    """The amount taken off `subtotal` by `codes`, rounded to the cent."""
    rate = combined_rate(resolve(codes))
    return (subtotal * rate).quantize(CENT, rounding=ROUND_HALF_UP)
'''


def checkout(pkg: str) -> str:
    """The checkout module: the public entry point."""
    return f'''"""Checkout: price a basket of lines and apply the customer's codes."""

from dataclasses import dataclass
from decimal import Decimal

from {pkg}.promotions import discount_for


@dataclass(frozen=True)
class Receipt:
    """Subtotal, discount and total of one checkout."""

    subtotal: Decimal
    discount: Decimal
    total: Decimal


def subtotal_of(lines):
    """The sum of unit price x quantity over (name, unit_price, quantity) lines."""
    total = Decimal("0.00")
    for name, price, qty in lines:
        if qty <= 0:
            raise ValueError(f"quantity of {{name}} must be positive")
        total += Decimal(str(price)) * qty
    return total


def checkout(lines, codes=()):
    """The receipt of a basket with the given codes."""
    subtotal = subtotal_of(lines)
    discount = discount_for(subtotal, codes)
    return Receipt(subtotal, discount, subtotal - discount)
'''


def tell(variant: int, rule: tuple[str, int], source: str) -> Story:
    """The story of one variant whose stacking rule is `rule`, placed in `source`."""
    s = shape(variant, rule)
    pkg, noun = s.package, s.noun
    c10, c15, c20a, c20b, c20c = s.codes
    base_tests = f'''from decimal import Decimal

import pytest

from {pkg}.checkout import checkout, subtotal_of
from {pkg}.promotions import resolve


def test_subtotal():
    assert subtotal_of([("tea", "4.50", 2), ("cake", "3.25", 1)]) == Decimal("12.25")


def test_no_codes_no_discount():
    r = checkout([("tea", "4.50", 2)])
    assert (r.discount, r.total) == (Decimal("0.00"), Decimal("9.00"))


def test_single_code():
    r = checkout([("box", "80.00", 1)], ["{c10}"])
    assert r.total == Decimal("72.00")


def test_codes_are_case_insensitive_and_counted_once():
    assert resolve(["{c15.lower()}", "{c15}"]) == [15]


def test_unknown_code():
    with pytest.raises(KeyError):
        checkout([("box", "80.00", 1)], ["NOPE"])


def test_bad_quantity():
    with pytest.raises(ValueError):
        subtotal_of([("box", "80.00", 0)])
'''
    repro = f'''from {pkg}.checkout import checkout

BASKET = [("lamp", "60.00", 1)]


def test_second_code_lowers_the_total():
    # Reported: adding {c15} on top of {c10} changes nothing at the till.
    one = checkout(BASKET, ["{c10}"]).total
    two = checkout(BASKET, ["{c10}", "{c15}"]).total
    assert two < one
'''
    cap_total = f"{Decimal(200) * (UNCAPPED - s.cap) / UNCAPPED:.2f}"
    hidden = f'''from decimal import Decimal

from {pkg}.checkout import checkout
from {pkg}.stacking import combined_rate

BASKET = [("desk", "200.00", 1)]


def test_hidden_two_codes_compound():
    r = checkout(BASKET, ["{c10}", "{c20a}"])
    assert r.total == Decimal("144.00")


def test_hidden_two_codes_compound_any_order():
    assert checkout(BASKET, ["{c15}", "{c15}", "{c20b}"]).total == checkout(BASKET, ["{c20b}", "{c15}"]).total
    assert checkout(BASKET, ["{c20b}", "{c15}"]).total == Decimal("136.00")


def test_hidden_cap_on_combined_discount():
    r = checkout(BASKET, ["{c20a}", "{c20b}", "{c20c}"])
    assert r.discount == Decimal("{Decimal(200) - Decimal(cap_total):.2f}")
    assert r.total == Decimal("{cap_total}")


def test_hidden_rate_helper():
    assert combined_rate([10, 20]) == Decimal("0.28")
    assert combined_rate([20, 20, 20, 10]) == Decimal("{rate(s.cap)}")
'''
    cap = percent(s.cap)
    filler_files = {
        f"{pkg}/receipt.py": '"""Plain-text receipts."""\n\n\ndef render(receipt):\n'
        '    """Three aligned lines: subtotal, discount, total."""\n'
        '    rows = [("Subtotal", receipt.subtotal), ("Discount", -receipt.discount), ("Total", receipt.total)]\n'
        '    return "\\n".join(f"{label:<10}{amount:>10}" for label, amount in rows)\n',
        "tests/test_receipt.py": f"from decimal import Decimal\n\nfrom {pkg}.checkout import Receipt\n"
        f"from {pkg}.receipt import render\n\n\ndef test_render_has_three_lines():\n"
        '    text = render(Receipt(Decimal("9.00"), Decimal("1.00"), Decimal("8.00")))\n'
        '    assert len(text.splitlines()) == 3\n',
    }
    h_note = f"The receipt shows the combined discount, which never exceeds {cap}% of the subtotal."
    return Story(
        package=pkg,
        module=f"{pkg}/stacking.py",
        **state_versions(stacking, s),
        base_files=package_files(
            pkg, f"{s.project}: a small till with {noun}s.",
            f"# {s.project}\n\nPrices baskets at the till and applies {noun}s.\n",
            {f"{pkg}/promotions.py": promotions(s), f"{pkg}/checkout.py": checkout(pkg),
             "tests/test_checkout.py": base_tests}),
        repro_tests={"tests/test_repro_stacking.py": repro},
        hidden_tests={"tests/test_hidden_stacking.py": hidden},
        # Two parts: how discounts combine, and the cap on the combined discount, each told by its own entry.
        filler=[noted_commit(source, "receipt: plain-text rendering", h_note, filler_files)],
        fact_tokens=tokens(s),
        tags=("money", "discount-rule", "split-fact"),
        project=s.project,
        **prose(f"""
        -- statement
        A customer used two {s.noun}s ({c10} and {c15}) and the till charged exactly what it charges
        with {c10} alone: the second {s.noun} is silently dropped from the total. tests/test_repro_stacking.py
        reproduces it.
        -- fact
        Stacked {s.noun}s compound (each applies to the already-discounted amount) and the combined discount
        is capped at {cap}% of the subtotal.
        -- conventional_guess
        add the percentages up (capped at 100%)
        -- intro_msg_fact
        stacking: combine {noun} percentages

        Stacked {noun}s compound: each applies to the already-discounted amount.
        -- intro_msg_plain
        stacking: combine {noun} percentages
        -- refactor_msg
        stacking: simplify combined_rate; add describe() for receipts
        -- K docs/CONVENTIONS.md
        - Discounts: several {noun}s compound: each one applies to the already-discounted amount, so 10% and
        20% take 28% off, not 30%.
        -- K docs/adr/0005-promotions.md
        Decision: whatever {noun}s are combined, the total discount never exceeds {cap}% of the subtotal.
        -- F
        - (review of #512, finance) Stacked {noun}s compound, one after another on the reduced price. Never
        add the percentages up.
        -- F
        - (review of #519, finance) However many {noun}s stack, the combined discount is capped at {cap}% of
        the subtotal.
        -- X
        ## Gift-card top-ups over-discounted
        Symptom: two promotions on a top-up took too much off in {pkg}/giftcards.py. Fix: percentages compound
        (multiply the remaining shares) like everywhere at the till; summing them was wrong.
        -- X
        ## Trade orders sold below cost
        Symptom: a trade order with three promotions was sold at a loss in {pkg}/trade.py. Fix: cap the
        combined discount at {cap}% of the subtotal, the house limit.
        -- docs/adr/0005-promotions.md
        # ADR-0005: Promotions at the till

        Status: Accepted

        {noun.capitalize()}s are resolved at checkout from a static catalog; each code counts once per basket.
        -- docs/adr/0003-discount-stacking.md
        # ADR-0003: Discount stacking

        Status: Superseded

        Percentages of stacked {noun}s were added up and capped at 100%. Superseded by the promotions
        decision; kept for the record.
        -- docs/adr/0004-vat.md
        # ADR-0004: VAT

        Status: Accepted

        Prices include VAT; discounts reduce the VAT-inclusive amount and VAT is re-derived on the receipt.
        -- docs/CONVENTIONS.md
        - Money is Decimal with two places; the discount amount rounds half-up to the cent.
        -- docs/CONVENTIONS.md
        - {noun.capitalize()} names are upper-case; input is normalised before lookup.
        -- .agent/preferences.md
        - (review of #488) Keep price arithmetic out of the checkout module; it orchestrates.
        -- .agent/preferences.md
        - (review of #501) Unknown codes must fail loudly, never be ignored silently.
        -- .agent/past_fixes.md
        ## Float prices drifted by a cent
        Symptom: 0.1 + 0.2 totals. Fix: parse prices with Decimal(str(x)).
        """),
    )


GENERATOR = Family(FAMILY, "multi-hop", "how several percentage discounts combine at checkout and the cap "
                   "on the combined discount (two parts, split across two entries)", variants=(0, 1),
                   draw=fact_rule, tell=tell, space=SPACE, by_source=True)
