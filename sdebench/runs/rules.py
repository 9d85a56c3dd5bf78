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
"""

from __future__ import annotations

import math
from typing import Any

from sdebench.grading.options import DEFAULT_FEEDBACK
from sdebench.runs.record import DEFAULT_MAX_INTERVENTIONS

DEFAULT_CAP = DEFAULT_MAX_INTERVENTIONS  # the cap of version 1 records that lack max_interventions
Z95 = 1.959963984540054
ERROR = "error"  # the stop_reason of an episode that ended in error


def _get(rec: Any, name: str, default: Any = None) -> Any:
    return rec.get(name, default) if isinstance(rec, dict) else getattr(rec, name, default)


def is_error(rec: Any) -> bool:
    """Whether `rec` ended in error (no outcome: kept out of every rate and counted apart)."""
    reason = _get(rec, "stop_reason")
    return isinstance(reason, str) and reason == ERROR  # NaN or None in a DataFrame row means missing


def outcome_label(rec: Any) -> str:
    """An episode's outcome as printed: `resolved`, `error (no outcome)` or `unresolved (<stop reason>)`."""
    if is_error(rec):
        return "error (no outcome)"
    if _get(rec, "resolved"):
        return "resolved"
    return f"unresolved ({_get(rec, 'stop_reason')})"


def resolved_at(rec: Any) -> int | None:
    """The submit (1-based) that resolved `rec`, or None; records older than the field derive it from attempts."""
    if not _get(rec, "resolved"):
        return None
    at = _get(rec, "resolved_at")
    if at is not None and at == at:  # NaN in a DataFrame row means missing
        return int(at)
    for a in _get(rec, "attempts") or []:
        if (a.get("resolved") if isinstance(a, dict) else a.resolved):
            return int(a.get("attempt") if isinstance(a, dict) else a.attempt)
    return int(_get(rec, "interventions") or 0) + 1


def resolved_first(rec: Any) -> bool:
    """resolve@1: resolved at the first submit."""
    return resolved_at(rec) == 1


def competency(rec: Any) -> str:
    """The competency of an episode's task (`recall` for records written before the field existed)."""
    value = _get(rec, "competency")
    return value if isinstance(value, str) and value else "recall"  # NaN in a DataFrame row means missing


def tier(rec: Any) -> str:
    """The tier of an episode's task: `recall`, or `hard` for any other competency (sdebench.tasks.artifacts)."""
    return "recall" if competency(rec) == "recall" else "hard"


PUBLISHED = "published"


def task_set(rec: Any) -> str:
    """The task set an episode ran on: `published`, or `fresh:<digest head>` for a private set, with
    `@<scale>` when generated at a non-default memory scale. Results of two sets are never pooled."""
    digest, scale = _get(rec, "set_digest"), _get(rec, "memory_scale")
    digest = None if digest != digest else digest  # NaN in a DataFrame row means missing
    scale = None if scale != scale else scale
    name = PUBLISHED if not digest else f"fresh:{str(digest).rsplit(':', 1)[-1][:12]}"
    return f"{name}@{scale}" if scale else name


def feedback_policy(rec: Any) -> str:
    """The grading feedback policy an episode ran under (records before the field: `binary`, the
    only policy there was)."""
    policy = _get(rec, "feedback_hidden")
    return DEFAULT_FEEDBACK if policy is None or policy != policy else str(policy)


def counted_interventions(rec: Any, cap: int = DEFAULT_CAP) -> int | None:
    """Interventions as every table counts them: the episode's own if resolved, else its cap; None if it ended in error."""
    if is_error(rec):
        return None  # not an unresolved episode: it has no outcome to count
    if _get(rec, "resolved"):
        return int(_get(rec, "interventions") or 0)
    c = _get(rec, "max_interventions")
    return int(cap if c is None or c != c else c)


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
