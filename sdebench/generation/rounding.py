"""The house rounding rule that rounding-policy and billing-rounding share: modes, increments, the
rule's fact space and draw, the words for each mode, and the tie sweep their held-out tests use.

Both families draw with the same key from the same rules, so the rounding stream's codebases carry
one fact.
"""

from __future__ import annotations

import itertools

from sdebench.generation.facts import space
from sdebench.generation.kit import pick

MODES = ("ROUND_HALF_UP", "ROUND_HALF_EVEN", "ROUND_HALF_DOWN", "ROUND_DOWN", "ROUND_FLOOR", "ROUND_UP",
         "ROUND_CEILING", "ROUND_05UP")
# Increments in the currency's smallest unit (cent, yen): cash and pricing increments.
INCREMENTS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)
HEAD = ("ROUND_CEILING", 1)
CONVENTIONAL = [("ROUND_HALF_UP", 1), ("ROUND_HALF_EVEN", 1), ("ROUND_DOWN", 1), ("ROUND_FLOOR", 1),
                ("ROUND_HALF_UP", 5), ("ROUND_HALF_UP", 10), ("ROUND_HALF_UP", 100), ("ROUND_HALF_EVEN", 5),
                ("ROUND_HALF_UP", 50), ("ROUND_HALF_UP", 25)]
# The draw: a mode that never rounds a non-tie up and is not the everyday one, at any increment,
# except plain truncation to the smallest unit (conventional).
DRAWABLE = [f for f in itertools.product(("ROUND_HALF_DOWN", "ROUND_DOWN", "ROUND_FLOOR"), INCREMENTS)
            if f not in CONVENTIONAL]
# Rule 7: the everyday rules first, then the drawable ones, then every mode at every increment (the
# hidden tests hit every increment's ties, positive and negative, so each behaves differently).
SPACE = space(CONVENTIONAL, DRAWABLE, itertools.product(MODES, INCREMENTS))
RULE_KEY = "house-rounding-rule"


def house_rule(variant: int) -> tuple[str, int]:
    """The house rule (mode, increment in smallest units): one for every codebase and variant."""
    return pick(RULE_KEY, DRAWABLE)


def mode_words(negatives: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """How each mode rounds (memory texts) and every spelling of it (fact tokens); `negatives` names
    the negative amounts of the domain (refunds, credits)."""
    return {
        "ROUND_HALF_UP": ("half-up (ties go up, away from zero)", ("half-up", "half up", "half_up", "round_half_up")),
        "ROUND_HALF_EVEN": ("half-even (ties go to the even neighbour)", ("half-even", "half even", "half_even",
                                                                         "round_half_even", "banker")),
        "ROUND_HALF_DOWN": ("half-down (ties go down, toward the smaller amount)",
                            ("half-down", "half down", "half_down", "halfdown", "round_half_down", "ties go down",
                             "ties toward the smaller", "ties to the smaller")),
        "ROUND_DOWN": ("toward zero (the rest is truncated)", ("round_down", "toward zero", "towards zero", "truncat")),
        "ROUND_FLOOR": (f"down to the floor (toward minus infinity, also for {negatives})",
                        ("round_floor", "floor", "minus infinity", "negative infinity")),
        "ROUND_UP": ("away from zero", ("round_up", "away from zero")),
        "ROUND_CEILING": ("up to the ceiling (toward plus infinity)", ("round_ceiling", "ceiling")),
        "ROUND_05UP": ("away from zero only after a 0 or 5 (05up)", ("round_05up", "05up", "05 up")),
    }


def tie_sweep(start):
    """Amounts in tenths of the smallest unit, at and next to every increment's ties, above `start`
    and below zero: the same whatever the rule, so no input singles the fact out. Integers, because
    an amount the rule keeps would otherwise be its own answer in the test's source."""
    out = []
    for units in INCREMENTS:
        half = units * 5  # half the increment, in tenths of the smallest unit
        for tie in (half, 3 * half):
            out += [start + tie, start + tie - 1, start + tie + 1, -tie, -tie - 1]
    return list(dict.fromkeys(out))
