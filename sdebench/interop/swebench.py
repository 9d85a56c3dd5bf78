"""SWE-bench exports: instance JSONL, a SWE-bench 5.x task repo, and predictions from episode records.

Instances carry SWE-bench's dataset fields plus the 5.x harness fields (`image`, `eval_script`,
`log_parser`, `eval_type`); FAIL_TO_PASS and PASS_TO_PASS are JSON-encoded lists of full pytest
node ids, collected on the oracle-patched repo (`sdebench.interop.nodeids`). The hidden tests
arrive through `test_patch`, so they join FAIL_TO_PASS. A task repo (`sweb.yaml`,
`tasks/<id>/{task.yaml, tests.json, problem_statement.md, gold.patch, test.patch, eval.sh,
Dockerfile, repo.bundle}`) is what `swebench dataset check` and `swebench eval --task-repo` read.
Predictions are `{instance_id, model_name_or_path, model_patch}` with the episode's final diff.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from sdebench.grading.grade import STARTUP_HOOKS, is_protected, pristine_tree
from sdebench.interop import container, nodeids
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

VERSION = "1.0"
IDENTITY = ("agent", "model", "delivery", "seed")
WORKDIR = "/testbed"
DATASET = "sdebench/sdebench"
SPLIT = "test"
# parse_log_pytest_v2 keeps the whole rest of a `PASSED <id>` line, so ids with spaces survive.
LOG_PARSER = "parse_log_pytest_v2"
EVAL_TYPE = "pass_and_fail"
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
PATCH_EOF = "SDEBENCH_TEST_PATCH_EOF"


class ExportError(ValueError):
    """Input that cannot be exported (the message says why)."""


def created_at(task: Task) -> str:
    """The HEAD commit time of the task's repo (repos use fixed timestamps), ISO 8601."""
    when = repo_mod.EPOCH + (max(task.commits, 1) - 1) * repo_mod.STEP
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_name(instance_id: str) -> str:
    """The image name SWE-bench derives for an instance (its `check_task_repo` insists on it)."""
    return f"swebench/sweb.eval.x86_64.{instance_id}:latest".lower().replace("__", "_1776_")


def _protected_tracked(task: Task) -> list[str]:
    """The test files and pytest configs of the task's HEAD tree."""
    return sorted(rel for rel in pristine_tree(task).as_dict() if is_protected(rel, frozenset(task.test_files)))


def eval_script(task: Task, test_patch: str, protected: list[str], test_paths: list[str]) -> str:
    """eval.sh: test files and pytest configs back to base, the hidden tests added, pytest -rA between markers."""
    if any(line == PATCH_EOF for line in test_patch.splitlines()):
        raise ExportError("the test patch contains the heredoc delimiter")
    base = task.head_sha
    restore = f"git checkout {base} -- " + " ".join(_quote(p) for p in protected) if protected else ":"
    hooks = "|".join(f"*/{h}" for h in sorted(STARTUP_HOOKS))
    drop = (
        "git ls-files --others | while IFS= read -r f; do\n"
        '  case "/$f" in\n'
        "    */conftest.py|*/pytest.ini|*/.pytest.ini|*/tox.ini|*/setup.cfg|*/pyproject.toml|*/test_*.py|*_test.py"
        f"|*/tests/*|*.pth|{hooks}) rm -f -- \"$f\" ;;\n"
        "  esac\n"
        "done\n"
    )
    body = test_patch if test_patch.endswith("\n") else test_patch + "\n"
    paths = " ".join(_quote(p) for p in test_paths)
    return (
        "#!/bin/bash\n"
        "set -uxo pipefail\n"
        f"cd {WORKDIR}\n"
        "# Tests and pytest configuration are graded from base_commit; ones the patch added are dropped.\n"
        f"{restore}\n"
        f"{drop}"
        f"git apply --verbose - <<'{PATCH_EOF}'\n{body}{PATCH_EOF}\n"
        f": '{START}'\n"
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1 python3 -B -m pytest -rA --tb=short "
        f"-p no:cacheprovider {paths}\n"
        f": '{END}'\n"
        f"{restore}\n"
    )


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def instance(task: Task, factory: SandboxFactory) -> dict[str, Any]:
    """The SWE-bench instance of one task (5.x fields included), with full node ids."""
    if not task.tests.fail_to_pass and not task.tests.hidden_to_pass:
        raise ExportError("no FAIL_TO_PASS test ids (graded by its own verifier)")
    try:
        ids = nodeids.full_ids(task, factory)
    except nodeids.NodeIdError as e:
        raise ExportError(str(e)) from None
    f2p = ids["FAIL_TO_PASS"] + ids["HIDDEN_TO_PASS"]
    p2p = ids["PASS_TO_PASS"]
    test_patch = repo_mod.diff_files({}, task.hidden_files())
    paths = sorted({i.split("::")[0] for i in f2p + p2p})
    return {
        "repo": f"sdebench/{task.family}",
        "instance_id": task.id,
        "base_commit": task.head_sha,
        "patch": task.oracle_patch,
        "test_patch": test_patch,
        "problem_statement": task.statement,
        "hints_text": "",
        "created_at": created_at(task),
        "version": VERSION,
        "FAIL_TO_PASS": json.dumps(f2p),
        "PASS_TO_PASS": json.dumps(p2p),
        "environment_setup_commit": task.head_sha,
        "image": image_name(task.id),
        "eval_script": eval_script(task, test_patch, _protected_tracked(task), paths),
        "log_parser": LOG_PARSER,
        "eval_type": EVAL_TYPE,
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


def _instances(tasks: list[Task], factory: SandboxFactory, w: Written) -> list[tuple[Task, dict[str, Any]]]:
    out = []
    for t in sorted(tasks, key=lambda t: t.id):
        try:
            out.append((t, instance(t, factory)))
        except (ExportError, OSError, repo_mod.RepoError) as e:
            w.skipped.append((t.id, str(e)))
    return out


def export_instances(tasks: list[Task], out: Path, factory: SandboxFactory) -> Written:
    """Write the instances of `tasks` (sorted by id) as JSONL; nothing is written when none exports."""
    w = Written()
    rows = [row for _, row in _instances(tasks, factory, w)]
    if rows:
        w.count = _write_jsonl(rows, out)
    return w


def export_task_repo(tasks: list[Task], out: Path, factory: SandboxFactory,
                     base_image: str = container.DEFAULT_BASE_IMAGE) -> Written:
    """Write a SWE-bench 5.x task repo of `tasks` into `out` (replacing its `tasks/` entries)."""
    w = Written()
    dockerfile = container.dockerfile(base_image, WORKDIR)
    done = _instances(tasks, factory, w)
    if not done:
        return w
    out = Path(out)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    (out / "sweb.yaml").write_text(yaml.safe_dump({"datasets": [DATASET], "splits": [SPLIT]}, sort_keys=True))
    for task, inst in done:
        d = out / "tasks" / task.id
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        meta = {k: inst[k] for k in ("instance_id", "repo", "version", "base_commit", "created_at",
                                     "environment_setup_commit", "image", "log_parser", "eval_type")}
        meta.update({"split": SPLIT, "datasets": [DATASET]})
        (d / "task.yaml").write_text(yaml.safe_dump(meta, sort_keys=True))
        tests = {"FAIL_TO_PASS": json.loads(inst["FAIL_TO_PASS"]), "PASS_TO_PASS": json.loads(inst["PASS_TO_PASS"])}
        (d / "tests.json").write_text(json.dumps(tests, indent=2) + "\n")
        (d / "problem_statement.md").write_text(inst["problem_statement"])
        (d / "gold.patch").write_text(inst["patch"])
        (d / "test.patch").write_text(inst["test_patch"])
        (d / "eval.sh").write_text(inst["eval_script"])
        (d / "Dockerfile").write_text(dockerfile)
        shutil.copyfile(task.bundle, d / container.BUNDLE_NAME)
        w.count += 1
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
