"""Imported tasks in the real episode loop, and predictions exported from the records it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sdebench.interop import bugsinpy as bp
from sdebench.interop import swebench
from sdebench.runs import results
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from tests.env.helpers import ROOT
from tests.interop import bugsinpy_fixture as fx

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("episodes")
    assert bp.import_parquet(fx.write_parquet(root / "t.parquet", fx.good_rows()), root / "tasks").skipped == []
    return root


def test_patch_agent_resolves_an_imported_task_through_the_run_cli(imported):
    fix = imported / "fix.patch"
    fix.write_text(repo_mod.diff_files({"solution.py": fx.BUGGY_ADD}, {"solution.py": fx.FIXED_ADD}))
    argv = [sys.executable, "-m", "sdebench.run", "agent=patch", f"agent.patch={fix}", "sandbox=unsafe_local",
            "delivery=squashed", f"tasks_dir={imported / 'tasks'}", f"results_dir={imported / 'results'}",
            "select.ids=bugsinpy-0001", f"hydra.run.dir={imported / 'run'}"]
    p = subprocess.run(argv, cwd=imported, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    (rec_path,) = (imported / "results" / "bugsinpy-0001").glob("*.json")
    rec = results.load_record(rec_path)
    assert rec.outcome.resolved and rec.outcome.stop_reason == "resolved" and rec.outcome.interventions == 0
    assert rec.attempts[0].counts["HIDDEN_TO_PASS"] == {"passed": 3, "total": 3}
    # The record becomes a SWE-bench prediction whose patch is the fix.
    out = imported / "preds.jsonl"
    w = swebench.export_predictions([imported / "run"], out)  # through the run dir's manifest
    (pred,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert w.count == 1 and pred["instance_id"] == "bugsinpy-0001" and pred["model_name_or_path"] == "none"
    work = repo_mod.unbundle(load(imported / "tasks" / "bugsinpy-0001").bundle, imported / "check")
    repo_mod.apply_patch(work, pred["model_patch"])
    assert (work / "solution.py").read_text() == fx.FIXED_ADD


def test_noop_on_an_imported_task_hits_the_no_op_guard(imported, tmp_path):
    task = load(imported / "tasks" / "bugsinpy-0002")
    cfg = {"agent": {"name": "noop"}, "delivery": {"name": "full"}, "model": {"name": "none"}, "max_interventions": 1}
    rec = run_episode(task, cfg, make_factory({"backend": "unsafe_local"}), work_root=tmp_path)
    assert not rec.outcome.resolved and rec.outcome.stop_reason == "max_interventions" and rec.outcome.error is None
    assert [a.guards for a in rec.attempts] == [["unchanged"], ["unchanged"]]
