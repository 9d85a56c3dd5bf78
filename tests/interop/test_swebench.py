"""SWE-bench instance and prediction JSONL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sdebench.interop import bugsinpy as bp
from sdebench.interop import swebench
from sdebench.runs import results
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from sdebench.tasks.selection import select
from tests.helpers import record as episode_record
from tests.interop import bugsinpy_fixture as fx

FIELDS = {"repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement", "hints_text", "created_at",
          "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit"}


def test_instances_of_the_committed_tasks(tasks_dir, tmp_path):
    tasks = select(tasks_dir)
    w = swebench.export_instances(tasks, tmp_path / "instances.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "instances.jsonl").read_text().splitlines()]
    assert w.count == len(tasks) == len(rows) and w.skipped == []
    assert [r["instance_id"] for r in rows] == sorted(t.id for t in tasks)
    by_id = {t.id: t for t in tasks}
    for r in rows:
        assert set(r) == FIELDS
        t = by_id[r["instance_id"]]
        # As in SWE-bench: the id lists are JSON-encoded strings.
        assert isinstance(r["FAIL_TO_PASS"], str) and isinstance(r["PASS_TO_PASS"], str)
        assert json.loads(r["FAIL_TO_PASS"]) == list(t.tests.fail_to_pass) + list(t.tests.hidden_to_pass)
        assert json.loads(r["PASS_TO_PASS"]) == list(t.tests.pass_to_pass)
        assert r["base_commit"] == t.head_sha and r["patch"] == t.oracle_patch
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["created_at"])


def test_patches_apply_at_base_commit(tasks_dir, tmp_path):
    t = load(tasks_dir / "ttlcache-v0-K")
    inst = swebench.instance(t)
    work = repo_mod.unbundle(t.bundle, tmp_path / "repo")
    assert repo_mod.head_sha(work) == inst["base_commit"]
    repo_mod.apply_patch(work, inst["patch"])
    repo_mod.apply_patch(work, inst["test_patch"])
    for rel, content in t.hidden_files().items():
        assert (work / rel).read_text() == content


def test_imported_tasks_without_ids_are_skipped(tmp_path):
    bp.import_parquet(fx.write_parquet(tmp_path / "t.parquet", fx.good_rows()[:1]), tmp_path / "tasks")
    w = swebench.export_instances([load(tmp_path / "tasks" / "bugsinpy-0001")], tmp_path / "x.jsonl")
    assert w.count == 0 and "no FAIL_TO_PASS" in w.skipped[0][1]


def record(root: Path, task_id: str, diff: str, **ident) -> Path:
    """An episode record as sdebench.runs.results writes it."""
    rec = episode_record(task_id=task_id, final_diff=diff, **{"agent": "llm", "model": "m1", "delivery": "full", **ident})
    p = results.record_path(root, rec.identity(), "k")
    results.write_record(p, rec)
    return p


def test_predictions_from_records(tasks_dir, tmp_path):
    oracle = load(tasks_dir / "billing-rounding-v0-K").oracle_patch
    record(tmp_path / "res", "billing-rounding-v0-K", oracle)
    record(tmp_path / "res", "ttlcache-v0-K", "")
    (tmp_path / "res" / "summary.json").write_text('{"not": "a record"}')
    (tmp_path / "res" / "broken.json").write_text("{")
    w = swebench.export_predictions([tmp_path / "res"], tmp_path / "preds.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "preds.jsonl").read_text().splitlines()]
    assert rows == [
        {"instance_id": "billing-rounding-v0-K", "model_name_or_path": "m1", "model_patch": oracle},
        {"instance_id": "ttlcache-v0-K", "model_name_or_path": "m1", "model_patch": ""},
    ]
    assert sorted(Path(f).name for f, _ in w.skipped) == ["broken.json", "summary.json"]


def test_ambiguous_records_need_a_filter(tmp_path):
    record(tmp_path / "res", "t1", "a", delivery="full")
    record(tmp_path / "res", "t1", "b", delivery="memtool")
    with pytest.raises(swebench.ExportError, match=r"differ in delivery \(full, memtool\): choose one with --delivery"):
        swebench.export_predictions([tmp_path / "res"], tmp_path / "p.jsonl")
    w = swebench.export_predictions([tmp_path / "res"], tmp_path / "p.jsonl", name="run-7", delivery="memtool")
    assert w.count == 1
    assert json.loads((tmp_path / "p.jsonl").read_text()) == {
        "instance_id": "t1", "model_name_or_path": "run-7", "model_patch": "b"}


def test_missing_results_dir_is_an_error(tmp_path):
    with pytest.raises(swebench.ExportError, match="no such file"):
        swebench.export_predictions([tmp_path / "nope"], tmp_path / "p.jsonl")
