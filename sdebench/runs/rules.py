"""The one definition of each per-episode metric every table, summary and report uses (plain Python,
no pandas, so a single run's summary stays light).

- resolve@1: resolved at the first submit, before any feedback (`resolved_at == 1`): the headline
  memory effect, since feedback lets an agent search.
- resolve@cap: resolved at all, within the cap of interventions.
- interventions: failing grades fed back; an unresolved episode counts as the cap, whatever ended
  it (a turn, cost or format limit included), so a cell that gives up early does not look cheap.
- intervals: Wilson score intervals (95 %) for proportions.
- tier: `recall` (the task's competency is recall, or the record predates competencies) or `hard`.
- errors: an episode that ended in error (`stop_reason == "error"`: a model that failed every call
  since some point, a broken set-up, an agent that failed before its model acted, a grade that could
  not run) has no outcome. Every rate, mean and paired comparison is over the episodes that did not
  end in error (`episodes`); the errored ones are counted apart (`errors`). `agent_error` (the
  agent's run failed after its model acted, for no reason outside it) is an unresolved outcome like
  any other stop: counted at the cap.
- outcome_label: how every summary and log line prints an episode: `resolved`, `error (no
  outcome)`, or `unresolved (<stop reason>)`, never "unresolved (error)".

Every rule takes one type, the typed record (sdebench.runs.record.EpisodeRecord); a DataFrame row
becomes one through `sdebench.runs.results.records` (missing and NaN values take their defaults there).
"""

from __future__ import annotations

import math

from sdebench.runs.record import DEFAULT_MAX_INTERVENTIONS, EpisodeRecord

DEFAULT_CAP = DEFAULT_MAX_INTERVENTIONS  # the cap of version 1 records that lack max_interventions
Z95 = 1.959963984540054
ERROR = "error"  # the stop_reason of an episode that ended in error


def is_error(rec: EpisodeRecord) -> bool:
    """Whether `rec` ended in error (no outcome: kept out of every rate and counted apart)."""
    return rec.outcome.stop_reason == ERROR


def outcome_label(rec: EpisodeRecord) -> str:
    """An episode's outcome as printed: `resolved`, `error (no outcome)` or `unresolved (<stop reason>)`."""
    if is_error(rec):
        return "error (no outcome)"
    if rec.outcome.resolved:
        return "resolved"
    return f"unresolved ({rec.outcome.stop_reason})"


def resolved_at(rec: EpisodeRecord) -> int | None:
    """The submit (1-based) that resolved `rec`, or None; records older than the field derive it from attempts."""
    o = rec.outcome
    if not o.resolved:
        return None
    if o.resolved_at is not None:
        return o.resolved_at
    for a in rec.attempts:
        if a.resolved:
            return a.attempt
    return o.interventions + 1


def resolved_first(rec: EpisodeRecord) -> bool:
    """resolve@1: resolved at the first submit."""
    return resolved_at(rec) == 1


def competency(rec: EpisodeRecord) -> str:
    """The competency of an episode's task (`recall` for records written before the field existed)."""
    return rec.identity.competency or "recall"


def tier(rec: EpisodeRecord) -> str:
    """The tier of an episode's task: `recall`, or `hard` for any other competency (sdebench.tasks.artifacts)."""
    return "recall" if competency(rec) == "recall" else "hard"


def memory_system(rec: EpisodeRecord) -> str:
    """The memory system an episode's delivery served (`none` when it serves none; memtool records
    from before the `memory` group: `bm25`, the only system there was)."""
    if rec.identity.memory:
        return rec.identity.memory
    return "bm25" if rec.identity.delivery == "memtool" else "none"


def arm(delivery: str, memory: str) -> str:
    """How tables name a delivery: `memtool/kg` for memtool behind a memory system other than BM25 (which
    stays `memtool`, as it always was), the delivery itself otherwise."""
    return delivery if memory in ("none", "bm25", "", "?") else f"{delivery}/{memory}"


PUBLISHED = "published"


def task_set(rec: EpisodeRecord) -> str:
    """The task set an episode ran on: `published`, or `fresh:<digest head>` for a private set, with
    `@<scale>` when generated at a non-default memory scale. Results of two sets are never pooled."""
    digest, scale = rec.identity.set_digest, rec.identity.memory_scale
    name = PUBLISHED if not digest else f"fresh:{digest.rsplit(':', 1)[-1][:12]}"
    return f"{name}@{scale}" if scale else name


def feedback_policy(rec: EpisodeRecord) -> str:
    """The grading feedback policy an episode ran under (records before the field: `binary`, the
    only policy there was)."""
    return rec.outcome.feedback_hidden


def counted_interventions(rec: EpisodeRecord, cap: int = DEFAULT_CAP) -> int | None:
    """Interventions as every table counts them: the episode's own if resolved, else its cap; None if it ended in error."""
    if is_error(rec):
        return None  # not an unresolved episode: it has no outcome to count
    if rec.outcome.resolved:
        return rec.outcome.interventions
    c = rec.outcome.max_interventions
    return cap if c is None else c


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (95 % by default); (0, 1) for n = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def rate_ci(k: int, n: int) -> str:
    """`k/n = p [lo, hi]`, with the Wilson 95 % interval; just `k/0` without episodes (no rate)."""
    if n <= 0:
        return f"{k}/{n}"
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.2f} [{lo:.2f}, {hi:.2f}]"
