"""Progress of a run or sweep on stderr (tqdm): episodes done, resolved so far, errors (episodes
with no outcome, sdebench.runs.rules.is_error: never shown as unresolved), cost so far.

`tracker(...)` returns the list a job collects its records in; each append advances the job's bar.
In a multirun, each episode's outcome is also appended as one line to `progress.jsonl` in the sweep
dir (a single small O_APPEND write, safe across worker processes), and the bar shows the sweep-wide
totals read from it. `progress: auto` shows bars only on a terminal; `true` always; `false` never.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from sdebench.runs.config import section
from sdebench.runs.schema import RunConfig

SWEEP_FILE = "progress.jsonl"


def enabled(setting: Any) -> bool:
    """Whether to show progress for the config value `setting` (auto, true, false)."""
    if isinstance(setting, bool):
        return setting
    if str(setting).lower() in ("true", "1", "yes", "on"):
        return True
    if str(setting).lower() in ("false", "0", "no", "off"):
        return False
    return sys.stderr.isatty()


def sweep_totals(path: Path) -> tuple[int, int, int, float]:
    """(episodes, resolved, errors, cost in USD) from a sweep's progress file; torn lines are skipped."""
    done = ok = errors = 0
    cost = 0.0
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return 0, 0, 0, 0.0
    for line in lines:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        done += 1
        ok += bool(d.get("resolved"))
        errors += bool(d.get("error"))
        cost += float(d.get("cost_usd") or 0.0)
    return done, ok, errors, cost


class ProgressTracker(list):
    """A list of EpisodeRecords whose `append` also advances a progress bar."""

    def __init__(self, total: int, desc: str, sweep_file: Path | None, show: bool):
        super().__init__()
        self.lock = threading.Lock()  # a job with concurrency > 1 appends from several threads
        self.sweep_file = sweep_file
        self.resolved = 0
        self.errors = 0
        self.cost = 0.0
        self.bar = None
        if show:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="ep", file=sys.stderr, dynamic_ncols=True, leave=True)

    def append(self, rec: Any) -> None:
        """Keep `rec` and report it."""
        with self.lock:
            self._append(rec)

    def _append(self, rec: Any) -> None:
        from sdebench.runs.rules import is_error

        super().append(rec)
        error = is_error(rec)
        self.resolved += rec.outcome.resolved and not error
        self.errors += error
        self.cost += float(rec.usage.cost_usd)
        if self.sweep_file is not None:
            line = json.dumps({"key": rec.key, "resolved": rec.outcome.resolved and not error, "error": error,
                               "cost_usd": float(rec.usage.cost_usd)}) + "\n"
            fd = os.open(self.sweep_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        if self.bar is not None:
            post = f"resolved={self.resolved}/{len(self)} errors={self.errors} cost=${self.cost:.4f}"
            if self.sweep_file is not None:
                n, ok, errors, cost = sweep_totals(self.sweep_file)
                post += f" | sweep: {n} done, {ok} resolved, {errors} errors, ${cost:.4f}"
            self.bar.set_postfix_str(post, refresh=False)
            self.bar.update(1)
            if self.bar.n >= self.bar.total:
                self.bar.close()


def tracker(conf: RunConfig, total: int, job_dir: Path) -> ProgressTracker:
    """The record list of one job: a bar over its `total` episodes, plus sweep-wide totals in a multirun."""
    job_dir = Path(job_dir)
    # Hydra writes multirun.yaml into the sweep dir; a job dir inside one belongs to a sweep
    in_sweep = (job_dir.parent / "multirun.yaml").is_file()
    desc = f"{section(conf.agent).get('name', '?')} {section(conf.delivery).get('name', '?')}"
    return ProgressTracker(total, desc, job_dir.parent / SWEEP_FILE if in_sweep else None, enabled(conf.progress))
