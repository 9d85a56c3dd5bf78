"""SWE-bench instance and prediction JSONL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sdebench.interop import bugsinpy as bp
from sdebench.interop import swebench
from sdebench.runs import results
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from tests.helpers import record as episode_record
from tests.interop import bugsinpy_fixture as fx
from tests.interop import verifier_run

FIELDS = {"repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement", "hints_text", "created_at",
          "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit", "image", "eval_script", "log_parser",
          "eval_type"}
SAMPLE = ("billing-rounding-v0-K", "ttlcache-v0-H", "minicalc-erragg-v0-F", "layered-config-v0-K")


@pytest.fixture(scope="module")
def factory():
    return make_factory({"backend": "unsafe_local"})


def test_instances_list_full_node_ids(tasks_dir, tmp_path, factory):
    tasks = [load(tasks_dir / i) for i in SAMPLE]
    w = swebench.export_instances(tasks, tmp_path / "instances.jsonl", factory)
    rows = [json.loads(line) for line in (tmp_path / "instances.jsonl").read_text().splitlines()]
    assert w.count == len(tasks) == len(rows) and w.skipped == []
    assert [r["instance_id"] for r in rows] == sorted(SAMPLE)
    by_id = {t.id: t for t in tasks}
    for r in rows:
        assert set(r) == FIELDS
        t = by_id[r["instance_id"]]
        # As in SWE-bench: the id lists are JSON-encoded strings.
        f2p, p2p = json.loads(r["FAIL_TO_PASS"]), json.loads(r["PASS_TO_PASS"])
        declared = list(t.tests.fail_to_pass) + list(t.tests.hidden_to_pass)
        # Every declared id is covered, by itself or by all of its parametrized instances.
        assert all(i in f2p or any(x.startswith(i + "[") for x in f2p) for i in declared)
        assert all(x.split("[")[0] in declared for x in f2p) and len(p2p) >= len(t.tests.pass_to_pass)
        assert r["base_commit"] == t.head_sha and r["patch"] == t.oracle_patch
        assert r["image"] == f"swebench/sweb.eval.x86_64.{t.id.lower()}:latest"
        assert r["log_parser"] == "parse_log_pytest_v2" and r["eval_type"] == "pass_and_fail"
        assert ">>>>> Start Test Output" in r["eval_script"] and ">>>>> End Test Output" in r["eval_script"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["created_at"])
    # A parametrized held-out test is listed by its instances, never by its bare name.
    layered = json.loads(next(r for r in rows if r["instance_id"] == "layered-config-v0-K")["FAIL_TO_PASS"])
    pairwise = "tests/test_hidden_precedence.py::test_hidden_pairwise_precedence"
    assert pairwise not in layered and sum(x.startswith(pairwise + "[") for x in layered) > 1


def test_patches_apply_at_base_commit(tasks_dir, tmp_path, factory):
    t = load(tasks_dir / "ttlcache-v0-K")
    inst = swebench.instance(t, factory)
    work = repo_mod.unbundle(t.bundle, tmp_path / "repo")
    assert repo_mod.head_sha(work) == inst["base_commit"]
    repo_mod.apply_patch(work, inst["patch"])
    repo_mod.apply_patch(work, inst["test_patch"])
    for rel, content in t.hidden_files().items():
        assert (work / rel).read_text() == content


def test_task_repo_layout(tasks_dir, tmp_path, factory):
    w = swebench.export_task_repo([load(tasks_dir / SAMPLE[0])], tmp_path / "repo", factory, base_image="img:1")
    assert w.count == 1
    d = tmp_path / "repo" / "tasks" / SAMPLE[0]
    assert sorted(p.name for p in d.iterdir()) == ["Dockerfile", "eval.sh", "gold.patch", "problem_statement.md",
                                                    "repo.bundle", "task.yaml", "test.patch",
                                                    "tests.json"]
    assert (d / "Dockerfile").read_text().startswith("FROM img:1\n")
    assert "diff --git" in (d / "gold.patch").read_text() and "diff --git" in (d / "test.patch").read_text()


def test_eval_script_grades_with_the_verifier_outside_the_repo(tasks_dir, tmp_path, factory):
    """eval.sh run for real on a checkout whose patch edited a test and added a conftest.py: the
    verifier grades its own sanitised copy, so neither counts, and the held-out phase fails."""
    t = load(tasks_dir / SAMPLE[0])
    inst = swebench.instance(t, factory)
    work = repo_mod.unbundle(t.bundle, tmp_path / "testbed")
    repo_mod.apply_patch(work, t.conventional_patch)
    (work / "tests" / "test_invoice.py").write_text("def test_x():\n    pass\n")
    (work / "conftest.py").write_text("raise SystemExit(0)\n")
    script = (inst["eval_script"].replace("cd /testbed", f"cd {work}").replace("=/testbed", f"={work}")
              .replace(swebench.VERIFIER_DIR, str(tmp_path / "verifier")))
    assert "expected" not in inst["test_patch"] and "observations" not in inst["test_patch"]
    p = eval_sh(script, tmp_path / "conventional.sh")
    out = p.stdout.split(">>>>> Start Test Output", 1)[1].split(">>>>> End Test Output", 1)[0]
    assert "PASSED tests/test_repro_overcharge.py" in out and "FAILED tests/test_hidden_rounding.py" in out, p.stdout + p.stderr
    assert "test_x" not in out and not (tmp_path / "verifier").exists()
    lines = [x for x in out.splitlines() if x.strip()]
    assert len(lines) == sum(len(json.loads(inst[g])) for g in ("FAIL_TO_PASS", "PASS_TO_PASS"))
    oracle = repo_mod.unbundle(t.bundle, tmp_path / "oracle")
    repo_mod.apply_patch(oracle, t.oracle_patch)
    script = (inst["eval_script"].replace("cd /testbed", f"cd {oracle}").replace("=/testbed", f"={oracle}")
              .replace(swebench.VERIFIER_DIR, str(tmp_path / "verifier")))
    path = tmp_path / "eval.sh"  # run as SWE-bench does, from a file: the key inside is made root-only
    p = eval_sh(script, path)
    assert path.stat().st_mode & 0o077 == 0
    out = p.stdout.split(">>>>> Start Test Output", 1)[1]
    assert "FAILED" not in out and "PASSED tests/test_hidden_rounding.py" in out, p.stdout + p.stderr
    assert json.loads(p.stdout.split(">>>>> Start Test Output", 1)[0].strip().splitlines()[-1])["reward"] == 1


def eval_sh(script: str, path: Path) -> subprocess.CompletedProcess:
    """Run eval.sh from a file as root, as SWE-bench does (the verifier inside runs the submission as
    fresh unprivileged users; verifier_run lets them reach this interpreter)."""
    path.write_text(script)
    path.chmod(0o644)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run(verifier_run.argv(path), capture_output=True, text=True, timeout=300, env=env)


def test_imported_tasks_without_ids_are_skipped(tmp_path, factory):
    bp.import_parquet(fx.write_parquet(tmp_path / "t.parquet", fx.good_rows()[:1]), tmp_path / "tasks")
    w = swebench.export_instances([load(tmp_path / "tasks" / "bugsinpy-0001")], tmp_path / "x.jsonl", factory)
    assert w.count == 0 and "no FAIL_TO_PASS" in w.skipped[0][1] and not (tmp_path / "x.jsonl").exists()


def record(root: Path, task_id: str, diff: str, **ident) -> Path:
    """An episode record as sdebench.runs.results writes it."""
    rec = episode_record(task_id=task_id, final_diff=diff, **{"agent": "llm", "model": "m1", "delivery": "full", **ident})
    p = results.record_path(root, rec.identity, "k")
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
