"""Sweep progress: the job bar and the sweep-wide tally, in a real multirun and in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdebench.runs import progress
from tests.helpers import record

ROOT = Path(__file__).resolve().parents[2]


def test_tracker_counts_resolved_and_cost(tmp_path, capsys):
    (tmp_path / "multirun.yaml").write_text("{}\n")
    job = tmp_path / "0"
    t = progress.tracker({"agent": {"name": "a"}, "delivery": {"name": "d"}, "progress": True}, 3, job)
    for ok, cost in ((True, 0.25), (False, 0.5), (True, 0.0)):
        t.append(record(key="k", resolved=ok, cost_usd=cost))
    assert len(t) == 3 and (t.resolved, t.cost) == (2, 0.75)
    err = capsys.readouterr().err
    assert "3/3" in err and "resolved=2/3 cost=$0.7500" in err and "sweep: 3 done, 2 resolved, $0.7500" in err
    assert progress.sweep_totals(tmp_path / progress.SWEEP_FILE) == (3, 2, 0.75)


def test_no_bar_when_disabled_and_no_tally_outside_a_sweep(tmp_path, capsys):
    t = progress.tracker({"progress": False}, 1, tmp_path / "run")
    t.append(record(resolved=True))
    assert capsys.readouterr().err == "" and not list(tmp_path.rglob(progress.SWEEP_FILE))
    assert progress.enabled("auto") == sys.stderr.isatty()


def test_torn_tally_lines_are_skipped(tmp_path):
    f = tmp_path / progress.SWEEP_FILE
    f.write_text(json.dumps({"resolved": True, "cost_usd": 1.0}) + "\n" + '{"resolved": tr')
    assert progress.sweep_totals(f) == (1, 1, 1.0)


@pytest.mark.slow
def test_multirun_shows_sweep_progress(tmp_path):
    args = ["-m", "agent=oracle,noop", "delivery=oracle", "source=K", "select.family=billing-rounding",
            "select.variant=0", "sandbox=unsafe_local", "progress=true", f"tasks_dir={ROOT / 'tasks'}",
            f"results_dir={tmp_path / 'results'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "oracle oracle" in r.stderr and "resolved=1/1" in r.stderr and "resolved=0/1" in r.stderr
    assert "sweep: 2 done, 1 resolved, $0.0000" in r.stderr
    assert progress.sweep_totals(tmp_path / "sweep" / progress.SWEEP_FILE) == (2, 1, 0.0)
