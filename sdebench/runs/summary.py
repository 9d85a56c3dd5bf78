"""The one summary engine: what a cell is, and the figures of a group of episodes.

Every summary reads its numbers from here: the run's end-of-sweep summary and `sdebench results`
(sdebench.runs.results), the analysis tables (sdebench.analysis.tables), the HTML report and
FINDINGS.md. Plain Python over typed records (sdebench.runs.record), no pandas, so a single run's
summary stays light; the per-episode rules are sdebench.runs.rules.

A **cell** (`CELL`) is task set x feedback policy x tier x agent x model x source x delivery x memory system. Episodes
of two task sets, feedback policies or tiers answer different questions and are never pooled; nor
are stream and static episodes (`kind`). `NEVER_POOLED` are the keys every grouping keeps, whatever
else it groups by (`grouping`).

A group key is any record field (sdebench.runs.record.FIELDS: a leaf name such as `agent` or
`section.leaf` such as `identity.agent`) or a derived key (`DERIVED`: kind, task_set, tier,
competency, feedback_hidden, memory), compared as text.

Figures of a group (`METRICS`): rates and per-episode means are over the episodes that did not end
in error (`episodes`; None when there are none), `errors` counts the others, `cost_usd` totals every
episode (that money was spent). resolve@1 first: the headline memory effect.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sdebench.runs import rules
from sdebench.runs.record import FIELDS, EpisodeRecord, get

CELL = ("task_set", "feedback_hidden", "tier", "agent", "model", "source", "delivery", "memory")
NEVER_POOLED = ("kind", "task_set", "feedback_hidden", "tier")
# Canonical orders (then by name): how every table and summary lists cells.
DELIVERIES = ("full", "squashed", "memtool", "inject", "oracle")
SOURCES = ("H", "K", "F", "X", "none")
TIERS = ("recall", "hard")
COMPETENCIES = ("recall", "conflict", "synthesis", "scope", "validity", "implicit")  # sdebench.tasks.artifacts
KINDS = ("static", "stream")
ORDERS = {"delivery": DELIVERIES, "source": SOURCES, "tier": TIERS, "competency": COMPETENCIES, "kind": KINDS}

DERIVED: dict[str, Callable[[EpisodeRecord], str]] = {
    "kind": lambda r: "stream" if r.stream is not None and r.stream.stream_id else "static",
    "task_set": rules.task_set,
    "tier": rules.tier,
    "competency": rules.competency,
    "feedback_hidden": rules.feedback_policy,
    "memory": rules.memory_system,
}

METRICS = ("episodes", "errors", "resolved_1", "resolve_1", "resolve_1_lo", "resolve_1_hi", "resolved", "resolve_rate",
           "resolve_rate_lo", "resolve_rate_hi", "interventions_capped", "interventions_resolved", "cost_usd",
           "mean_cost_usd", "mean_tokens", "mean_prompt_tokens", "mean_completion_tokens", "mean_inject_tokens",
           "mean_turns", "mean_memory_search", "mean_wall_s", "retrieved", "memory_cost_usd", "mean_memory_load_s")


def names() -> list[str]:
    """Every name a group key or a filter may use: record fields and derived keys."""
    return sorted({*FIELDS, *DERIVED})


def value(rec: EpisodeRecord, name: str) -> Any:
    """The value of key `name` for `rec` (a derived key, else a record field); KeyError if unknown."""
    if name in DERIVED:
        return DERIVED[name](rec)
    return get(rec, name)


def text(v: Any) -> str:
    """A key value as compared and printed: booleans `true`/`false`, None `none`, else str."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return "none" if v is None else str(v)


def grouping(by: Sequence[str]) -> tuple[str, ...]:
    """The keys of a grouping by `by`: the never-pooled keys first, then `by` (each once)."""
    return tuple(dict.fromkeys([*NEVER_POOLED, *by]))


def rank(name: str, v: str) -> tuple[int, str]:
    """The sort key of value `v` of key `name`: its canonical position, then its text."""
    order = ORDERS.get(name, ())
    return (order.index(v) if v in order else len(order), v)


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def figures(recs: list[EpisodeRecord], cap: int = rules.DEFAULT_CAP) -> dict[str, Any]:
    """The METRICS of one group of episodes."""
    valid = [r for r in recs if not rules.is_error(r)]
    n = len(valid)
    solved = [r for r in valid if r.outcome.resolved]
    first = sum(rules.resolved_first(r) for r in valid)
    (lo1, hi1), (lo, hi) = (rules.wilson(first, n), rules.wilson(len(solved), n)) if n else ((None, None), (None, None))
    inject = [float(r.delivery.inject_tokens) for r in valid if r.delivery.inject_tokens is not None]
    loads = [r.delivery.memory_load for r in recs if r.delivery.memory_load]
    return {
        "episodes": n,
        "errors": len(recs) - n,
        "resolved_1": first,
        "resolve_1": first / n if n else None,
        "resolve_1_lo": lo1,
        "resolve_1_hi": hi1,
        "resolved": len(solved),
        "resolve_rate": len(solved) / n if n else None,
        "resolve_rate_lo": lo,
        "resolve_rate_hi": hi,
        # unresolved episodes count at their cap, whatever ended them (sdebench.runs.rules)
        "interventions_capped": _mean([rules.counted_interventions(r, cap) for r in valid]),
        "interventions_resolved": _mean([r.outcome.interventions for r in solved]),
        "cost_usd": math.fsum(r.usage.cost_usd for r in recs),  # spent, errored episodes included
        "mean_cost_usd": _mean([r.usage.cost_usd for r in valid]),
        "mean_tokens": _mean([r.usage.tokens for r in valid]),
        "mean_prompt_tokens": _mean([r.usage.prompt_tokens for r in valid]),
        "mean_completion_tokens": _mean([r.usage.completion_tokens for r in valid]),
        "mean_inject_tokens": _mean(inject),  # over the episodes that had an inject
        "mean_turns": _mean([r.usage.turns for r in valid]),
        "mean_memory_search": _mean([r.usage.tool_calls.get("memory_search", 0) for r in valid]),
        "mean_wall_s": _mean([r.timing.wall_s for r in valid]),
        # episodes whose decisive memory item reached the agent (docs/retrieval.md)
        "retrieved": sum(bool(r.retrieval is not None and r.retrieval.retrieved) for r in valid),
        # what loading the memory systems cost (mem0's model calls; spent, errored episodes included) and took
        "memory_cost_usd": math.fsum(float(m.get("cost_usd") or 0.0) for m in loads),
        "mean_memory_load_s": _mean([float(m.get("seconds") or 0.0) for m in loads]),
    }


def groups(records: Iterable[EpisodeRecord], by: Sequence[str]) -> dict[tuple[str, ...], list[EpisodeRecord]]:
    """The records of each group of `by` (exactly these keys), in sorted key order."""
    out: dict[tuple[str, ...], list[EpisodeRecord]] = {}
    for r in records:
        out.setdefault(tuple(text(value(r, k)) for k in by), []).append(r)
    return dict(sorted(out.items()))


def summarize(records: Iterable[EpisodeRecord], by: Sequence[str] = ("kind", *CELL),
              cap: int = rules.DEFAULT_CAP) -> list[dict[str, Any]]:
    """One row per group of `by` (exactly these keys; see `grouping`): the keys, then the METRICS."""
    return [{**dict(zip(by, key, strict=True)), **figures(rs, cap)} for key, rs in groups(records, by).items()]


def ordered(rows: list[dict[str, Any]], by: Sequence[str]) -> list[dict[str, Any]]:
    """`rows` in canonical order of the keys `by` (sources H K F X none, deliveries full ... oracle, ...)."""
    return sorted(rows, key=lambda r: tuple(rank(k, str(r[k])) for k in by))
