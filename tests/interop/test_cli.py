"""`python -m sdebench.interop` subcommands."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

from sdebench.interop.__main__ import main
from tests.env.helpers import ROOT
from tests.helpers import record
from tests.interop import bugsinpy_fixture as fx


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "sdebench.interop", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_bugsinpy_import_and_export_from_the_command_line(tmp_path):
    parquet = fx.write_parquet(tmp_path / "tasks.parquet", fx.good_rows() + fx.more_rows() + fx.bad_rows())
    p = run("bugsinpy-import", str(parquet), "--out", str(tmp_path / "tasks"), "--sandbox", "unsafe_local")
    assert p.returncode == 0, p.stderr
    assert "imported 5 task(s)" in p.stdout and "skipped 8 row(s)" in p.stdout
    assert p.stderr.count("skipped row") == 8 and "Traceback" not in p.stderr
    assert "note bugsinpy-0004: not graded: test_wrong_in_the_dataset: fails on the dataset's fixed solution" in p.stderr
    p = run("bugsinpy-export", "--tasks-dir", str(tmp_path / "tasks"), "--out", str(tmp_path / "out.parquet"))
    assert p.returncode == 0, p.stderr
    assert pq.read_table(tmp_path / "out.parquet").column("path").to_pylist() == [
        "bugsinpy-0001", "bugsinpy-0002", "bugsinpy-0003", "bugsinpy-0004", "bugsinpy-0005"]


def test_bad_parquet_is_one_line(tmp_path):
    (tmp_path / "x.parquet").write_text("garbage")
    p = run("bugsinpy-import", str(tmp_path / "x.parquet"), "--out", str(tmp_path / "t"))
    assert p.returncode == 2 and p.stderr.startswith("error:") and p.stderr.count("\n") == 1


def test_harbor_and_swebench_exports(tasks_dir, tmp_path, capsys):
    ids = "billing-rounding-v0-K,ttlcache-v0-H"
    common = ["--tasks-dir", str(tasks_dir), "--ids", ids, "--sandbox", "unsafe_local"]
    assert main(["harbor-export", *common, "--out", str(tmp_path / "h")]) == 0
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["billing-rounding-v0-K", "ttlcache-v0-H"]
    assert main(["swebench-export", *common, "--out", str(tmp_path / "i.jsonl")]) == 0
    assert len((tmp_path / "i.jsonl").read_text().splitlines()) == 2
    assert main(["swebench-export", *common, "--task-repo", str(tmp_path / "repo"), "--base-image", "img:2"]) == 0
    assert sorted(p.name for p in (tmp_path / "repo" / "tasks").iterdir()) == ["billing-rounding-v0-K", "ttlcache-v0-H"]
    capsys.readouterr()
    assert main(["swebench-export", "--tasks-dir", str(tasks_dir), "--ids", "nope", "--out", str(tmp_path / "j")]) == 1
    err = capsys.readouterr().err
    assert "no task 'nope'" in err and "error: nothing exported" in err and not (tmp_path / "j").exists()


def test_an_export_of_nothing_exits_non_zero_with_the_reason(tasks_dir, tmp_path):
    (tmp_path / "empty").mkdir()
    p = run("bugsinpy-export", "--tasks-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "x.parquet"))
    assert p.returncode == 1 and f"error: nothing exported to {tmp_path / 'x.parquet'}: no tasks in" in p.stderr
    assert not (tmp_path / "x.parquet").exists()
    # Our tasks are multi-file: BugsInPy-v2 takes none of them, and says why for each.
    p = run("bugsinpy-export", "--tasks-dir", str(tasks_dir), "--ids", "billing-rounding-v0-K",
            "--out", str(tmp_path / "y.parquet"))
    assert p.returncode == 1 and "skipped billing-rounding-v0-K:" in p.stderr
    assert "every selected task was skipped" in p.stderr and not (tmp_path / "y.parquet").exists()


def test_swebench_predictions(tmp_path, capsys):
    rec = record(task_id="t1", final_diff="d", agent="a", model="m", delivery="full", seed=3)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "e.json").write_text(rec.to_json())
    assert main(["swebench-predictions", str(tmp_path / "r"), "--out", str(tmp_path / "p.jsonl"), "--seed", "3"]) == 0
    assert json.loads((tmp_path / "p.jsonl").read_text())["model_patch"] == "d"
    assert main(["swebench-predictions", str(tmp_path / "none"), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
