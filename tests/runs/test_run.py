"""`python -m sdebench.run` end to end in subprocesses: records, resume, sweeps, summaries, SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdebench.runs import results
from tests.minitask import build_all

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = ["task_id", "family", "variant", "source", "bottleneck", "delivery", "agent", "model", "seed", "resolved", "interventions", "attempts", "turns", "tool_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd", "wall_s", "model_s", "tools_s", "grading_s", "final_diff", "stop_reason", "error", "trajectory", "task_hash", "config_hash", "key"]


def sandbox_args(tmp: Path) -> list[str]:
    """Select the unsafe_local backend; its config comes from an extra search path if conf/ lacks it."""
    extra = tmp / "extra-conf" / "sandbox"
    extra.mkdir(parents=True, exist_ok=True)
    (extra / "unsafe_local.yaml").write_text("backend: unsafe_local\n")
    return [f"hydra.searchpath=[file://{extra.parent}]", "sandbox=unsafe_local"]


def env() -> dict[str, str]:
    """This checkout first on the import path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def cli(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=cwd, env=env(), capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tasks")
    build_all(out)
    return out


def common(tmp_path: Path, tasks: Path, sandbox: list[str] | None = None) -> list[str]:
    sandbox = sandbox_args(tmp_path) if sandbox is None else sandbox
    return [*sandbox, f"tasks_dir={tasks}", f"results_dir={tmp_path / 'results'}",
            f"hydra.run.dir={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]


def test_single_run_writes_records_prints_the_table_and_resumes(tmp_path, tasks):
    args = [*common(tmp_path, tasks), "agent=oracle", "delivery=squashed", "source=K"]
    r = cli(args, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "| source | squashed |" in r.stdout and "| K | 1/1 (0.0) |" in r.stdout
    files = list((tmp_path / "results").rglob("*.json"))
    assert len(files) == 1
    rec = results.read_record(files[0])
    assert set(REQUIRED) <= set(rec.flat()), set(REQUIRED) - set(rec.flat())
    assert rec.outcome.resolved and rec.outcome.interventions == 0 and Path(rec.storage.trajectory).is_file()
    assert (tmp_path / "out" / results.MANIFEST).read_text().strip() == str(files[0].resolve())
    before = files[0].stat().st_mtime_ns
    again = cli(args, tmp_path)
    assert again.returncode == 0 and "already done" in again.stderr + again.stdout
    assert files[0].stat().st_mtime_ns == before and "| K | 1/1 (0.0) |" in again.stdout
    forced = cli([*args, "rerun=true"], tmp_path)
    assert forced.returncode == 0 and files[0].stat().st_mtime_ns != before
    assert len(list((tmp_path / "results").rglob("*.json"))) == 1


def test_bad_input_is_one_line(tmp_path, tasks):
    r = cli([*common(tmp_path, tasks), f"tasks_dir={tmp_path / 'nowhere'}"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("sdebench.run: error:") and "Traceback" not in r.stderr
    none = cli([*common(tmp_path, tasks), "select.family=no-such-family"], tmp_path)
    assert none.returncode == 1 and "No episodes." in none.stdout and "matched no task" in none.stderr


def test_multirun_with_joblib_writes_the_summary(tmp_path, tasks):
    args = ["-m", *common(tmp_path, tasks), "hydra/launcher=parallel", "agent=oracle,noop", "delivery=full,inject",
            "source=K,none", "max_interventions=1"]
    r = cli(args, tmp_path)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "sweep" / "summary.md").read_text()
    assert "### agent=oracle model=none" in md and "| K | 1/1 (0.0) | 1/1 (0.0) |" in md
    assert "### agent=noop model=none" in md and "| none | 0/1 (1.0) | 0/1 (1.0) |" in md
    assert "Summary of 8 episodes" in r.stdout
    df = results.load(tmp_path / "sweep")
    assert len(df) == 8 and set(df["delivery"]) == {"full", "inject"}
    import pandas as pd

    summary = pd.read_parquet(tmp_path / "sweep" / "summary.parquet")
    assert len(summary) == 8 and summary["episodes"].sum() == 8


def test_sigkill_halfway_then_rerun_leaves_one_intact_record_per_episode(tmp_path, tasks):
    args = ["-m", *common(tmp_path, tasks), "agent=oracle", "delivery=squashed,full", "source=all"]
    proc = subprocess.Popen([sys.executable, "-m", "sdebench.run", *args], cwd=tmp_path, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list((tmp_path / "results").rglob("*.json"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list((tmp_path / "results").rglob("*.json")))
    assert 3 <= done_before < 10, "the sweep must be killed halfway"
    r = cli(args, tmp_path)
    assert r.returncode == 0, r.stderr
    assert (r.stdout + r.stderr).count("already done") >= done_before
    files = sorted((tmp_path / "results").rglob("*.json"))
    recs = [results.read_record(f) for f in files]
    assert len(files) == 10 and all(recs)
    episodes = [(x.identity.task_id, x.identity.delivery, x.identity.agent) for x in recs]
    assert len(set(episodes)) == 10 and len({x.key for x in recs}) == 10
    assert all(x.outcome.resolved and x.outcome.interventions == 0 for x in recs)
    assert not [p for p in (tmp_path / "results").rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.slow
@pytest.mark.bwrap
def test_reference_matrix_on_one_family(tmp_path):
    """The CI check, reduced to one family and variant: every delivery, source and reference agent."""
    args = ["-m", "experiment=reference_matrix", *common(tmp_path, ROOT / "tasks", ["sandbox=local"]),
            "hydra/launcher=parallel",
            "select.family=ttlcache", "select.variant=0", "source=all"]
    r = cli(args, tmp_path, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    recs = results.manifest_records(tmp_path / "sweep")
    assert len(recs) == 5 * 5 * 3  # deliveries x sources x agents
    assert not [x for x in recs if x.outcome.error]
    for x in recs:
        if x.identity.agent == "oracle":
            assert x.outcome.resolved and x.outcome.interventions == 0, x.identity.task_id
        elif x.identity.agent == "conventional":
            assert not x.outcome.resolved and x.outcome.interventions == 5 and len(x.attempts) == 6, x.identity.task_id
        else:
            assert not x.outcome.resolved, x.identity.task_id
    md = (tmp_path / "sweep" / "summary.md").read_text()
    assert "Summary of 75 episodes" in r.stdout and md in r.stdout
    for source in ("H", "K", "F", "X", "none"):
        assert f"| {source} | 1/1 (0.0) | 1/1 (0.0) | 1/1 (0.0) | 1/1 (0.0) | 1/1 (0.0) |" in md
        assert f"| {source} | 0/1 (5.0) | 0/1 (5.0) | 0/1 (5.0) | 0/1 (5.0) | 0/1 (5.0) |" in md


def test_error_records_run_again_unless_told_not_to(tmp_path, tasks, caplog):
    import logging

    from sdebench.runs.run import run_job

    cfg = {"agent": {"name": "patch", "patch": str(tmp_path / "missing.patch")}, "model": {"name": "none"},
           "delivery": {"name": "squashed"}, "source": "K", "sandbox": {"backend": "unsafe_local"},
           "tasks_dir": str(tasks), "results_dir": str(tmp_path / "results"), "seed": 0, "max_interventions": 5,
           "select": {}, "limits": {}}
    first = run_job(cfg, tmp_path / "job")
    assert len(first) == 1 and first[0].outcome.stop_reason == "error" and "no such file" in first[0].outcome.error
    with caplog.at_level(logging.INFO, logger="sdebench.run"):
        run_job(cfg, tmp_path / "job")
        assert "running it again" in caplog.text
        caplog.clear()
        run_job({**cfg, "retry_errors": False}, tmp_path / "job")
        assert "already done" in caplog.text
    (tmp_path / "missing.patch").write_text((tasks / "mini-pricing-v0-K" / "oracle.patch").read_text())
    fixed = run_job(cfg, tmp_path / "job")
    assert fixed[0].outcome.resolved and len(list((tmp_path / "results").rglob("*.json"))) == 1


def test_bad_model_config_is_one_startup_error(tmp_path, tasks):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *common(tmp_path, tasks), "agent=llm", "model=openai"],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "sdebench.run: error: agent: " in r.stderr and "OPENAI_API_KEY" in r.stderr
    assert not list((tmp_path / "results").rglob("*.json"))


def test_submitit_local_launcher(tmp_path, tasks):
    args = ["-m", *common(tmp_path, tasks), "hydra/launcher=cluster_local", "agent=oracle,noop", "source=K",
            "max_interventions=0"]
    r = cli(args, tmp_path)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "sweep" / "summary.md").read_text()
    assert "| K | 1/1 (0.0) |" in md and "| K | 0/1 (0.0) |" in md
