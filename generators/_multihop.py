"""Shared pieces of the multi-hop families: per-source filler commits and keyed draws.

A split fact is given to the kit as a list of (artifact path, entry) per source, every part
needed. In H the second part of a split fact lives in a filler commit message instead of an
artifact; `filler` builds that commit, fact-free in every other placement.
"""

from __future__ import annotations

import random

from sdebench.generation.spec import Commit


def filler(source: str, message: str, h_note: str, files: dict[str, str | None]) -> Commit:
    """A filler commit; in H its message carries `h_note` (a part of the fact) as a second paragraph."""
    if source == "H" and h_note:
        return Commit(f"{message}\n\n{h_note}", files)
    return Commit(message, files)


def draw(key: str, population: list) -> object:
    """A deterministic choice keyed by a string (never the global RNG)."""
    return random.Random(key).choice(population)


def draw_distinct(key: str, population: list, count: int) -> list:
    """`count` distinct deterministic choices keyed by a string."""
    return random.Random(key).sample(population, count)
