"""What a job runs: its tasks, selected from the run config, and the one error for bad input of a whole run.

Shared by the run command (`sdebench.runs.run`), its plan (`sdebench.runs.plan`) and streams.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from sdebench.errors import RunError
from sdebench.runs.schema import RunConfig

log = logging.getLogger("sdebench.run")


def select_tasks(conf: RunConfig) -> list:
    """The tasks of `conf.tasks_dir` matching `conf.source` and `conf.select`; bad task dirs are skipped with a warning."""
    from sdebench.runs import sweep
    from sdebench.runs.config import ConfigError, sources
    from sdebench.tasks.record import TaskError
    from sdebench.tasks.selection import select

    sel = conf.select
    root = Path(conf.tasks_dir or "tasks")
    if not root.is_dir():
        raise RunError(f"no tasks dir at {root.resolve()} (run where ./tasks is, or pass tasks_dir=DIR)")
    try:
        return select(root, source=sources(conf.source), family=sel.family, variant=sel.variant,
                      bottleneck=sel.bottleneck, ids=sel.ids, competency=sel.competency, tier=sel.tier,
                      on_error=lambda msg: (log.warning("skipping: %s", msg), sweep.report("malformed_task", msg)))
    except (ConfigError, TaskError) as e:
        raise RunError(str(e)) from None


def filter_text(conf: RunConfig) -> str:
    """The task filter of `conf` as a user types it: `source=K select.family=ttlcache` (unset keys left out)."""
    sel = {k: v for k, v in dataclasses.asdict(conf.select).items() if v is not None}
    return " ".join([f"source={conf.source}", *(f"select.{k}={_value(v)}" for k, v in sel.items())])


def _value(v: Any) -> str:
    return ",".join(str(x) for x in v) if isinstance(v, list | tuple) else str(v)


def outcome(rec) -> str:
    """One line: resolved, why not, or error (no outcome); interventions, wall time, error."""
    from sdebench.runs.rules import outcome_label

    state = outcome_label(rec)
    err = f", error: {rec.outcome.error}" if rec.outcome.error else ""
    return f"{state}, {rec.outcome.interventions} interventions, {rec.timing.wall_s:.2f}s{err}"
