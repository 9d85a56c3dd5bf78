"""Where a results dir's records came from: one JSON line per job in `<results_dir>/.runs.ndjson`.

Each job of `sdebench run` appends, before its first episode, the command line of its sweep, the
sweep id, the time it started, the git commit of the code that runs it (and whether that checkout
had uncommitted changes to tracked files), the sdebench version, the digest of its whole resolved
config, the `config_hash` its records carry (sdebench.runs.results.config_hash) and a few key config
values. The report reads these lines to say which command, commit and config produced a sweep
(sdebench.analysis.runinfo).

The file is hidden and neither `*.json` nor `*.jsonl`, so nothing takes it for a record or a
trajectory; one short append per job keeps lines from parallel jobs whole. Provenance must never cost a result: a line
that cannot be written is a warning, a line that cannot be read is skipped.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

FILE = ".runs.ndjson"
SCHEMA = "sdebench.run/1"
COMMAND_ENV = "SDEBENCH_COMMAND"  # set by the command-line wrapper (sdebench.runs.sweep.cli) for its jobs
# The config values a reader of a report needs first (dotted keys of the resolved config).
KEY_VALUES = ("agent.name", "model.name", "model.litellm_model", "delivery.name", "source", "seed", "max_interventions",
              "grading.feedback_hidden", "limits.max_turns", "limits.max_cost_usd", "limits.max_wall_s",
              "sandbox.backend", "tasks_dir", "select.family", "select.variant", "select.ids", "select.competency",
              "select.tier", "budget_usd")
CODE_ROOT = Path(__file__).resolve().parents[2]  # the checkout this sdebench package is imported from

log = logging.getLogger("sdebench.run")


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(CODE_ROOT), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def code_state() -> dict[str, Any]:
    """The git commit of the running code and whether tracked files differ from it (None: not a git checkout)."""
    from sdebench import __version__

    head = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if head else None
    return {"commit": head.strip() if head else None, "dirty": None if status is None else bool(status.strip()),
            "version": __version__}


def dotted(cfg: dict[str, Any], key: str) -> Any:
    """The value at dotted `key` of a nested config, or None."""
    v: Any = cfg
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


def config_digest(cfg: dict[str, Any]) -> str:
    """A short digest of the whole resolved config (every key, paths included)."""
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()[:12]


def job_entry(cfg: Any, now: dt.datetime | None = None) -> dict[str, Any]:
    """The provenance line of one job run with the run config `cfg` (typed, or a resolved mapping)."""
    from sdebench.runs import results
    from sdebench.runs.budget import SWEEP_ID_ENV
    from sdebench.runs.config import plain, settings

    conf = settings(cfg)
    cfg = plain(conf)
    now = now or dt.datetime.now(dt.UTC)
    return {"schema": SCHEMA, "sweep_id": os.environ.get(SWEEP_ID_ENV),
            "command": os.environ.get(COMMAND_ENV) or shlex.join(sys.argv),
            "started_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"), **code_state(),
            "config_digest": config_digest(cfg), "config_hash": results.config_hash(conf),
            "config": {k: dotted(cfg, k) for k in KEY_VALUES}}


def note_job(cfg: Any, results_dir: Path) -> None:
    """Append this job's provenance line to `results_dir`; a failure to write is only a warning."""
    line = json.dumps(job_entry(cfg), sort_keys=True, default=str) + "\n"
    try:
        Path(results_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(results_dir) / FILE, "a") as f:
            f.write(line)  # one short write in append mode: parallel jobs' lines never interleave
    except OSError as e:
        log.warning("could not note the run's provenance in %s: %s", results_dir, e)


def read(results_dir: Path) -> list[dict[str, Any]]:
    """The provenance lines of `results_dir` (none if it has no file; malformed lines skipped)."""
    out = []
    with contextlib.suppress(OSError):
        for raw in (Path(results_dir) / FILE).read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(raw)
                if isinstance(entry, dict):
                    out.append(entry)
    return out
