"""A family's fact space: the candidates a memoryless agent could try, with prior weights, and the
family's own draw of the fact.

The space is declared as data, before and independently of any drawn fact (rule 7): conventional
values carry the highest weights, every value the draw can produce is a candidate, and so are its
obvious neighbours. The draw is an enumerable distribution, so the prober's resolve probability over
it is exact; `sample` draws from it with an RNG passed in (no module-level randomness).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

CONVENTIONAL_WEIGHT = 10.0  # a conventional value is ten times as likely, a priori, as any other candidate
PLAIN_WEIGHT = 1.0
NEIGHBOUR_WEIGHT = 1.0


@dataclass(frozen=True)
class FactSpace:
    """Candidates (value, prior weight) in declaration order, and the draw (value, probability)."""

    candidates: tuple[tuple[object, float], ...]
    draw: tuple[tuple[object, float], ...]

    def __post_init__(self) -> None:
        values = [v for v, _ in self.candidates]
        if len(set(values)) != len(values):
            raise ValueError("a fact space lists a candidate twice")
        if any(w <= 0 for _, w in self.candidates):
            raise ValueError("prior weights must be positive")
        total = sum(p for _, p in self.draw)
        if not self.draw or abs(total - 1.0) > 1e-9:
            raise ValueError(f"the draw's probabilities must sum to 1, not {total}")

    @property
    def size(self) -> int:
        """The number of candidates."""
        return len(self.candidates)

    def values(self) -> list[object]:
        """The candidates in declaration order."""
        return [v for v, _ in self.candidates]

    def prior(self) -> dict[object, float]:
        """Candidate -> prior weight."""
        return dict(self.candidates)

    def outside_draw(self) -> list[object]:
        """Values the draw can produce that are not candidates (must be empty)."""
        known = set(self.values())
        return [v for v, _ in self.draw if v not in known]

    def sample(self, rng: random.Random) -> object:
        """One fact drawn from the family's draw with `rng`."""
        values, probs = zip(*self.draw, strict=True)
        return rng.choices(values, probs)[0]


def uniform(values: Iterable[object]) -> tuple[tuple[object, float], ...]:
    """The uniform draw over `values` (what a rejection loop over a range produces)."""
    vs = list(dict.fromkeys(values))
    return tuple((v, 1.0 / len(vs)) for v in vs)


def accepted(lo: int, hi: int, accept: Callable[[int], bool]) -> list[int]:
    """The integers in [lo, hi] a rejection loop `randint(lo, hi) until accept(n)` can return."""
    return [n for n in range(lo, hi + 1) if accept(n)]


def space(conventional: Mapping[object, float] | Iterable[object], drawn: Iterable[object],
          others: Iterable[object] = (), draw: tuple[tuple[object, float], ...] | None = None) -> FactSpace:
    """A space of conventional values (weight CONVENTIONAL_WEIGHT unless given), then the drawable
    values and `others` (neighbours, near-conventional values) at PLAIN_WEIGHT; the draw is uniform
    over `drawn` unless given."""
    conv = dict(conventional) if isinstance(conventional, Mapping) else dict.fromkeys(conventional, CONVENTIONAL_WEIGHT)
    cands: dict[object, float] = dict(conv)
    drawn = list(drawn)
    for v in [*drawn, *others]:
        cands.setdefault(v, PLAIN_WEIGHT)
    return FactSpace(tuple(cands.items()), draw if draw is not None else uniform(drawn))


def integer_space(conventional: Iterable[int], lo: int, hi: int, accept: Callable[[int], bool],
                  margin: int = 0) -> FactSpace:
    """A numeric fact drawn by rejection from [lo, hi]: conventional values first, then every integer
    of [lo - margin, hi + margin] (the drawable ones and their neighbours)."""
    return space(conventional, accepted(lo, hi, accept), range(lo - margin, hi + margin + 1))


def draw_integer(key: str, lo: int, hi: int, accept: Callable[[int], bool]) -> int:
    """`randint(lo, hi)` from an RNG seeded with `key`, redrawn until `accept`: the families' numeric
    draw, whose distribution is `uniform(accepted(lo, hi, accept))`."""
    rng = random.Random(key)
    while True:
        n = rng.randint(lo, hi)
        if accept(n):
            return n


# --- numeric facts: their spellings, uniform draws and spaces ------------------------------------


def decimal_spellings(value: Decimal, places: int, *, percent: bool = False, comma: bool = True,
                      units: Iterable[str] = ()) -> tuple[str, ...]:
    """Every spelling of a decimal value memory could use: the number with `places` decimals (bare,
    so it is found before any unit), its decimal-comma form, and for a percentage its share
    (`3.17` -> `0.0317`) and basis points; `units` are written after the number (`1.37 EUR`)."""
    text = f"{value:.{places}f}"
    out = [text]
    if comma:
        out.append(text.replace(".", ","))
    if percent:
        share = (value / 100).normalize()
        out += [f"{share:f}", f"{int(value * 100)} bp", f"{int(value * 100)} basis points"]
    out += [f"{text} {u}" for u in units]
    return tuple(dict.fromkeys(out))


def non_round(value: Decimal, step: str = "0.05") -> bool:
    """Whether `value` is not a multiple of `step` (a round figure a guess would land on)."""
    return value % Decimal(step) != 0


def far_from(value: Decimal, others: Iterable[Decimal], gap: str) -> bool:
    """Whether `value` is more than `gap` away from each of `others`."""
    return all(abs(value - o) > Decimal(gap) for o in others)


def decimal_range(lo: str, hi: str, step: str) -> list[Decimal]:
    """The decimals lo, lo + step, ..., hi (inclusive), exact."""
    a, b, s = Decimal(lo), Decimal(hi), Decimal(step)
    n = int((b - a) / s)
    return [a + s * i for i in range(n + 1)]


@dataclass(frozen=True)
class Draw:
    """A numeric fact: the values its draw picks from (uniformly, keyed by variant) and its space (rule 7)."""

    key: str  # the draw of variant `v` is keyed by `{key}-{v}`
    values: tuple[Any, ...]
    space: FactSpace
    # variant -> values its draw never returns (the decoy that variant's memory repeats, say)
    exclude: Callable[[int], Iterable[Any]] = lambda variant: ()

    def __call__(self, variant: int) -> Any:
        """The variant's drawn fact."""
        left = set(self.exclude(variant))
        return random.Random(f"{self.key}-{variant}").choice([v for v in self.values if v not in left])


def decimal_draw(key: str, lo: str, hi: str, step: str, conventional: Iterable[Decimal], margin: str, *,
                 accept: Callable[[Decimal], bool] | None = None, round_step: str = "0.05", gap: str = "0.03",
                 exclude: Callable[[int], Iterable[Any]] = lambda variant: ()) -> Draw:
    """A decimal fact drawn uniformly from the multiples of `step` in [lo, hi] that `accept` keeps
    (default: non-round and more than `gap` away from every conventional value); the space holds the
    conventional values first, then every step of [lo - margin, hi + margin]."""
    conventional = tuple(conventional)
    if accept is None:
        def accept(v: Decimal) -> bool:
            return non_round(v, round_step) and far_from(v, conventional, gap)
    values = tuple(v for v in decimal_range(lo, hi, step) if accept(v))
    around = decimal_range(str(Decimal(lo) - Decimal(margin)), str(Decimal(hi) + Decimal(margin)), step)
    return Draw(key, values, space(conventional, values, around), exclude)


def integer_draw(key: str, lo: int, hi: int, conventional: Iterable[int], accept: Callable[[int], bool],
                 margin: int = 5) -> Draw:
    """An integer fact drawn uniformly from [lo, hi] where `accept` holds; the space holds the
    conventional values first, then every integer of [lo - margin, hi + margin]."""
    return Draw(key, tuple(accepted(lo, hi, accept)), integer_space(conventional, lo, hi, accept, margin))
