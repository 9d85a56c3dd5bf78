"""Paired statistics for two deliveries run on the same tasks: the exact McNemar test, a paired
bootstrap interval of the difference, and how many tasks a given effect needs.

A unit is one (task, agent, model, seed) run under both deliveries; its outcome is resolve@1 in
each. Only the discordant units (resolved under one delivery, not the other) carry information
about the difference, which is why the paired design needs far fewer tasks than two independent
samples when the deliveries agree on most tasks.

Sample size (Connor 1987, the normal approximation of McNemar's test): with `d` the difference of
resolve@1 (p1 - p0) and `q` the discordant-pair rate,

    n = (z_{1-alpha/2} * sqrt(q) + z_{power} * sqrt(q - d^2))^2 / d^2

units. Without pilot data, `q` is taken as if the two outcomes of a unit were independent,
`q = p1 (1 - p0) + p0 (1 - p1)`; outcomes that agree more (the usual case: easy tasks are easy
under every delivery) lower `q` and the n needed, so the figure is conservative for that reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z = {0.975: 1.959963984540054, 0.8: 0.8416212335729143, 0.9: 1.2815515655446004, 0.995: 2.5758293035489004}
BASELINES = (0.05, 0.1, 0.2, 0.3, 0.5)
EFFECTS = (0.1, 0.2, 0.3, 0.5)
FORMULA = ("paired tasks needed for a resolve@1 difference d over baseline p0, exact McNemar two-sided at alpha 0.05, "
           "80 % power: n = (1.96 sqrt(q) + 0.84 sqrt(q - d^2))^2 / d^2, q = p1 (1 - p0) + p0 (1 - p1) the "
           "discordant-pair rate if a task's two outcomes were independent (p1 = p0 + d; outcomes that agree more "
           "need fewer tasks)")


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (binomial, p = 1/2); 1.0 with none."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap_diff(task_ids: Sequence[str], diffs: Sequence[float], n_boot: int, seed: int) -> tuple[float, float]:
    """The 95 % percentile interval of the mean paired difference, resampling tasks (a task's seeds stay together)."""
    tasks = sorted(set(task_ids))
    if not tasks:
        return float("nan"), float("nan")
    pos = {t: i for i, t in enumerate(tasks)}
    sums, counts = np.zeros(len(tasks)), np.zeros(len(tasks))
    for t, d in zip(task_ids, diffs, strict=True):
        sums[pos[t]] += d
        counts[pos[t]] += 1
    idx = np.random.default_rng(seed).integers(0, len(tasks), size=(n_boot, len(tasks)))
    draws = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return float(lo), float(hi)


def discordant_rate(p0: float, p1: float) -> float:
    """The discordant-pair rate if a unit's two outcomes were independent: p1 (1 - p0) + p0 (1 - p1)."""
    return p1 * (1 - p0) + p0 * (1 - p1)


def tasks_needed(p0: float, delta: float, alpha: float = 0.05, power: float = 0.8, q: float | None = None) -> int:
    """Paired units needed to detect a resolve@1 difference `delta` over baseline `p0` (McNemar, two-sided)."""
    if delta <= 0 or not 0 <= p0 <= 1 or p0 + delta > 1:
        raise ValueError(f"need 0 < delta and p0 + delta <= 1 (p0={p0}, delta={delta})")
    za, zb = Z[round(1 - alpha / 2, 3)], Z[power]
    q = discordant_rate(p0, p0 + delta) if q is None else q
    if q < delta:
        raise ValueError(f"discordant rate {q} is below the difference {delta}")
    return math.ceil((za * math.sqrt(q) + zb * math.sqrt(q - delta * delta)) ** 2 / delta ** 2)


def sample_size_rows(baselines: Sequence[float] = BASELINES, effects: Sequence[float] = EFFECTS,
                     alpha: float = 0.05, power: float = 0.8) -> list[dict[str, object]]:
    """One row per baseline resolve@1: the tasks needed for each effect (blank where p0 + effect > 1)."""
    rows = []
    for p0 in baselines:
        row: dict[str, object] = {"baseline resolve@1": f"{p0:.2f}"}
        for d in effects:
            row[f"+{d:.2f}"] = str(tasks_needed(p0, d, alpha, power)) if p0 + d <= 1 + 1e-12 else ""
        rows.append(row)
    return rows
