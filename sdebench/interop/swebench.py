"""SWE-bench exports: instance JSONL, a SWE-bench 5.x task repo, and predictions from episode records.

Instances carry SWE-bench's dataset fields plus the 5.x harness fields (`image`, `eval_script`,
`log_parser`, `eval_type`); FAIL_TO_PASS and PASS_TO_PASS are JSON-encoded lists of full pytest
node ids, collected on the oracle-patched repo (`sdebench.interop.nodeids`); the hidden tests
join FAIL_TO_PASS. `test_patch` adds the hidden observation tests (for reference: they hold inputs,
not expected values); `eval_script` grades with sdebench's own default-fail verifier (the one the
Harbor export ships), unpacked outside the repo: both phases, observations judged against the
expected ones, one `PASSED`/`FAILED <id>` line per graded test for SWE-bench's log parser. A task repo (`sweb.yaml`,
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

from sdebench.errors import InteropError
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


class ExportError(InteropError, ValueError):
    """Input that cannot be exported (the message says why)."""


def created_at(task: Task) -> str:
    """The HEAD commit time of the task's repo (repos use fixed timestamps), ISO 8601."""
    when = repo_mod.EPOCH + (max(task.commits, 1) - 1) * repo_mod.STEP
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_name(instance_id: str) -> str:
    """The image name SWE-bench derives for an instance (its `check_task_repo` insists on it)."""
    return f"swebench/sweb.eval.x86_64.{instance_id}:latest".lower().replace("__", "_1776_")


VERIFIER_DIR = "/sdebench-verifier"  # outside the repo: the submitted code never imports it
# Prints one pytest -rA style line per graded test from the verifier's details (PASSED/FAILED <id>),
# so SWE-bench's own log parser reads the verdicts; the verifier lists every id, failed unless it
# proved it passed (a guard or an error fails them all); no details at all prints nothing, which
# SWE-bench counts as every test failing. (The answer key is gone by then: the verifier removes it.)
_VERDICTS = (
    "import json, sys\n"
    "try:\n"
    "    details = json.load(open(sys.argv[1]))\n"
    "except (OSError, ValueError):\n"
    "    details = {}\n"
    "for group, graded in sorted((details.get('tests') or {}).items()):\n"
    "    for i, outcome in graded.items():\n"
    "        print(('PASSED ' if outcome == 'passed' else 'FAILED ') + i)\n"
)


def _tar_b64(files: dict[str, bytes]) -> str:
    """`files` as a deterministic gzipped tar, base64 in lines of 76 (a heredoc in eval.sh)."""
    import base64

    from sdebench.interop.bugsinpy import pack_tar

    raw = base64.b64encode(pack_tar(files)).decode()
    return "\n".join(raw[i:i + 76] for i in range(0, len(raw), 76))


def eval_script(task: Task, verifier: dict[str, bytes]) -> str:
    """eval.sh: unpack sdebench's default-fail verifier outside the repo, grade /testbed with it (both
    phases, observations judged against the expected ones), print one PASSED/FAILED line per test
    between SWE-bench's markers."""
    payload = _tar_b64(verifier)
    if PATCH_EOF in payload:
        raise ExportError("the verifier payload contains the heredoc delimiter")
    tests, logs = f"{VERIFIER_DIR}/tests", f"{VERIFIER_DIR}/logs"
    return (
        "#!/bin/bash\n"
        "set -uo pipefail\n"
        f"cd {WORKDIR}\n"
        "# The verifier restores tests and pytest configuration from the base tree in its own copy of\n"
        "# the repo; the hidden tests and the expected observations live only in its dir.\n"
        "# The script holds the answer key: only root may read it (the verifier removes its copy before\n"
        "# any submitted code runs, which runs only as an unprivileged user, or not at all).\n"
        'if [ -f "$0" ]; then chmod 0700 "$0"; fi\n'
        f"rm -rf {VERIFIER_DIR} && mkdir -m 0700 -p {VERIFIER_DIR} && mkdir -p {tests} {logs}\n"
        f"base64 -d <<'{PATCH_EOF}' | tar -xz -C {tests}\n{payload}\n{PATCH_EOF}\n"
        f"SDEBENCH_APP={WORKDIR} SDEBENCH_LOG_DIR={logs} python3 -B {tests}/verify.py\n"
        f"echo '{START}'\n"
        f"python3 -B -c {_quote(_VERDICTS)} {logs}/details.json\n"
        f"echo '{END}'\n"
        f"rm -rf {VERIFIER_DIR}\n"
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
    from sdebench.interop.harbor import verifier_files

    verifier = verifier_files(task, ids)
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
        "eval_script": eval_script(task, verifier),
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
    chosen = [r for r in records if all(str(getattr(r.identity, k)) == v for k, v in want.items())]
    by_task: dict[str, list[Any]] = {}
    for r in chosen:
        by_task.setdefault(r.identity.task_id, []).append(r)
    out = []
    for task_id in sorted(by_task):
        rs = by_task[task_id]
        if len(rs) > 1:
            differ = [k for k in IDENTITY if len({str(getattr(r.identity, k)) for r in rs}) > 1]
            if differ:
                k = differ[0]
                values = ", ".join(sorted({str(getattr(r.identity, k)) for r in rs}))
                raise ExportError(f"{len(rs)} records for {task_id} differ in {k} ({values}): choose one with --{k}")
            raise ExportError(f"{len(rs)} records for {task_id} with the same identity: pass one results dir")
        r = rs[0]
        out.append(
            {
                "instance_id": task_id,
                "model_name_or_path": name or str(r.identity.model or "unknown"),
                "model_patch": r.outcome.final_diff,
            }
        )
    return out


def export_predictions(paths: Iterable[str | Path], out: Path, name: str | None = None, **filters: Any) -> Written:
    """Write SWE-bench predictions JSONL from the episode records under `paths`."""
    records, skipped = read_records(paths)
    w = Written(skipped=skipped)
    w.count = _write_jsonl(predictions(records, name, **filters), out)
    return w
