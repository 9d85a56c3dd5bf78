"""Shared pieces of the multi-hop families: split fact entries and per-source filler commits.

A split fact is a list of (artifact path, entry) per source, every part needed. The entries are
appended after the distractors, the order `familykit.assemble` uses for its own fact entry, so
the artifact files are the same whichever way the kit receives them. In H the second part of a
split fact lives in a filler commit message instead of an artifact.
"""

from __future__ import annotations

import random

from sdebench.family import Commit

Entries = dict[str, list[tuple[str, str]]]


def placed(distractors: list[tuple[str, str]], entries: Entries, source: str) -> list[tuple[str, str]]:
    """The distractors plus the fact entries of `source` (none for H and none)."""
    return [*distractors, *entries.get(source, [])]


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
