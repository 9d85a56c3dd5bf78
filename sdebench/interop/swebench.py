"""SWE-bench-style JSONL: task instances, and predictions from episode records.

Instances carry SWE-bench's fields; as in the published dataset, FAIL_TO_PASS and PASS_TO_PASS
are JSON-encoded lists of test ids (strings). The hidden tests arrive through `test_patch`, so
they join FAIL_TO_PASS. Predictions are `{instance_id, model_name_or_path, model_patch}` with the
episode's final diff as the patch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

VERSION = "1.0"
IDENTITY = ("agent", "model", "delivery", "seed")


class ExportError(ValueError):
    """Input that cannot be exported (the message says why)."""


def created_at(task: Task) -> str:
    """The HEAD commit time of the task's repo (repos use fixed timestamps), ISO 8601."""
    when = repo_mod.EPOCH + (max(task.commits, 1) - 1) * repo_mod.STEP
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def instance(task: Task) -> dict[str, Any]:
    """The SWE-bench instance of one task."""
    if not task.tests.fail_to_pass and not task.tests.hidden_to_pass:
        raise ExportError("no FAIL_TO_PASS test ids (graded by its own verifier)")
    return {
        "repo": f"sdebench/{task.family}",
        "instance_id": task.id,
        "base_commit": task.head_sha,
        "patch": task.oracle_patch,
        "test_patch": repo_mod.diff_files({}, task.hidden_files()),
        "problem_statement": task.statement,
        "hints_text": "",
        "created_at": created_at(task),
        "version": VERSION,
        "FAIL_TO_PASS": json.dumps(list(task.tests.fail_to_pass) + list(task.tests.hidden_to_pass)),
        "PASS_TO_PASS": json.dumps(list(task.tests.pass_to_pass)),
        "environment_setup_commit": task.head_sha,
    }


@dataclass
class Written:
    """What an export wrote and what it left out."""

    count: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _write_jsonl(rows: Iterable[dict[str, Any]], out: Path) -> int:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    n = 0
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            n += 1
    tmp.replace(out)
    return n


def export_instances(tasks: list[Task], out: Path) -> Written:
    """Write the instances of `tasks` (sorted by id) as JSONL; tasks without test ids are skipped."""
    w = Written()
    rows = []
    for t in sorted(tasks, key=lambda t: t.id):
        try:
            rows.append(instance(t))
        except (ExportError, OSError) as e:
            w.skipped.append((t.id, str(e)))
    w.count = _write_jsonl(rows, out)
    return w


def read_records(paths: Iterable[str | Path]) -> tuple[list[Any], list[tuple[str, str]]]:
    """Episode records (sdebench.runs.record.EpisodeRecord) under `paths` (results dirs, Hydra run
    dirs via their manifests, or record files), one per episode key, and the JSON files that are
    not records, with the reason."""
    from sdebench.runs import results
    from sdebench.runs.record import RecordError

    paths = [Path(p) for p in paths]
    for p in paths:
        if not p.exists():
            raise ExportError(f"{p}: no such file or directory")
    records: dict[str, Any] = {}
    skipped = []
    for f in results.record_files(*paths):
        try:
            rec = results.load_record(f)
        except (OSError, RecordError) as e:
            skipped.append((str(f), f"not an episode record ({e})"))
            continue
        records.setdefault(str(rec.key or f), rec)
    return list(records.values()), skipped


def predictions(records: list[Any], name: str | None = None, **filters: Any) -> list[dict[str, str]]:
    """One prediction per task from the records matching `filters` (agent, model, delivery, seed).

    Records that disagree on agent/model/delivery/seed for one task are ambiguous: ExportError
    names the field to filter on.
    """
    want = {k: str(v) for k, v in filters.items() if v is not None}
    bad = sorted(set(want) - set(IDENTITY))
    if bad:
        raise ExportError(f"unknown filter(s): {', '.join(bad)}")
    chosen = [r for r in records if all(str(getattr(r, k)) == v for k, v in want.items())]
    by_task: dict[str, list[Any]] = {}
    for r in chosen:
        by_task.setdefault(r.task_id, []).append(r)
    out = []
    for task_id in sorted(by_task):
        rs = by_task[task_id]
        if len(rs) > 1:
            differ = [k for k in IDENTITY if len({str(getattr(r, k)) for r in rs}) > 1]
            if differ:
                k = differ[0]
                values = ", ".join(sorted({str(getattr(r, k)) for r in rs}))
                raise ExportError(f"{len(rs)} records for {task_id} differ in {k} ({values}): choose one with --{k}")
            raise ExportError(f"{len(rs)} records for {task_id} with the same identity: pass one results dir")
        r = rs[0]
        out.append(
            {
                "instance_id": task_id,
                "model_name_or_path": name or str(r.model or "unknown"),
                "model_patch": r.final_diff,
            }
        )
    return out


def export_predictions(paths: Iterable[str | Path], out: Path, name: str | None = None, **filters: Any) -> Written:
    """Write SWE-bench predictions JSONL from the episode records under `paths`."""
    records, skipped = read_records(paths)
    w = Written(skipped=skipped)
    w.count = _write_jsonl(predictions(records, name, **filters), out)
    return w
