"""Sweep progress: the job bar and the sweep-wide tally, in a real multirun and in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdebench.runs import progress
from sdebench.runs.config import settings
from tests.helpers import record

ROOT = Path(__file__).resolve().parents[2]


def test_tracker_counts_resolved_errors_and_cost(tmp_path, capsys):
    (tmp_path / "multirun.yaml").write_text("{}\n")
    job = tmp_path / "0"
    t = progress.tracker(settings({"agent": {"name": "a"}, "delivery": {"name": "d"}, "progress": True}), 4, job)
    for ok, why, cost in ((True, "resolved", 0.25), (False, "max_interventions", 0.5), (True, "resolved", 0.0),
                          (False, "error", 0.125)):
        t.append(record(key="k", resolved=ok, stop_reason=why, cost_usd=cost))
    assert len(t) == 4 and (t.resolved, t.errors, t.cost) == (2, 1, 0.875)
    err = capsys.readouterr().err
    assert "4/4" in err and "resolved=2/4 errors=1 cost=$0.8750" in err
    assert "sweep: 4 done, 2 resolved, 1 errors, $0.8750" in err
    assert progress.sweep_totals(tmp_path / progress.SWEEP_FILE) == (4, 2, 1, 0.875)


def test_no_bar_when_disabled_and_no_tally_outside_a_sweep(tmp_path, capsys):
    t = progress.tracker(settings({"progress": False}), 1, tmp_path / "run")
    t.append(record(resolved=True, stop_reason="resolved"))
    assert capsys.readouterr().err == "" and not list(tmp_path.rglob(progress.SWEEP_FILE))
    assert progress.enabled("auto") == sys.stderr.isatty()


def test_torn_tally_lines_are_skipped(tmp_path):
    f = tmp_path / progress.SWEEP_FILE
    f.write_text(json.dumps({"resolved": True, "cost_usd": 1.0}) + "\n" + '{"resolved": tr')
    assert progress.sweep_totals(f) == (1, 1, 0, 1.0)


@pytest.mark.slow
def test_multirun_shows_sweep_progress(tmp_path):
    args = ["-m", "agent=oracle,noop", "delivery=oracle", "source=K", "select.family=billing-rounding",
            "select.variant=0", "sandbox=unsafe_local", "progress=true", f"tasks_dir={ROOT / 'tasks'}",
            f"results_dir={tmp_path / 'results'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "oracle oracle" in r.stderr and "resolved=1/1" in r.stderr and "resolved=0/1" in r.stderr
    assert "sweep: 2 done, 1 resolved, 0 errors, $0.0000" in r.stderr
    assert progress.sweep_totals(tmp_path / "sweep" / progress.SWEEP_FILE) == (2, 1, 0, 0.0)
