"""A job's episodes in parallel (`concurrency=N`) and sweeps that share work on one results_dir."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sdebench.agents import trajectory as traj_mod
from sdebench.runs import pool, results
from tests.minitask import build_all
from tests.runs.test_run import common, env
from tests.runs.test_sweep import SLOW, two_sweeps


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tasks")
    build_all(out)
    return out


def test_run_all_keeps_at_most_n_at_once_and_comes_back_to_held_items():
    running, peak, seen = [0], [0], []
    lock = threading.Lock()
    held_elsewhere = {2, 5}

    def attempt(item: int, wait: bool) -> bool:
        if item in held_elsewhere and not wait:
            return False  # another process holds it
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            seen.append((item, wait))
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return True

    pool.run_all(list(range(12)), attempt, concurrency=4)
    assert peak[0] == 4
    assert sorted(i for i, _ in seen) == list(range(12))  # each item dealt with once
    assert {i for i, wait in seen if wait} == held_elsewhere  # held ones last, waiting for their claim
    assert {i for i, _ in seen[-2:]} == held_elsewhere  # started once every other item had started


def test_run_all_raises_a_worker_exception_and_stops_taking_items():
    taken = []

    def attempt(item: int, wait: bool) -> bool:
        taken.append(item)
        if item == 1:
            raise RuntimeError("boom")
        time.sleep(0.2)
        return True

    with pytest.raises(RuntimeError, match="boom"):
        pool.run_all(list(range(50)), attempt, concurrency=3)
    assert len(taken) < 10


@pytest.mark.parametrize("raw", [0, -1, "many", 1.5, True])
def test_concurrency_must_be_a_positive_whole_number(raw):
    with pytest.raises(ValueError, match="concurrency must be a whole number"):
        pool.concurrency_of(raw)


def _spans(recs) -> list[tuple[float, float]]:
    out = []
    for r in recs:
        ts = [e["t"] for e in traj_mod.read(Path(r.storage.trajectory))]
        out.append((min(ts), max(ts)))
    return out


def _peak_overlap(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, d in edges:
        now += d
        peak = max(peak, now)
    return peak


@pytest.mark.slow
def test_concurrency_runs_a_jobs_episodes_at_once_each_exactly_once(tmp_path, tasks):
    log = tmp_path / "agent.log"
    args = [*common(tmp_path, tasks), *SLOW, "delivery=squashed", "concurrency=5", "progress=false"]
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600, env={**env(), "SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": "2"})
    assert r.returncode == 0, r.stderr[-3000:]
    recs = results.read_records(tmp_path / "results")
    assert len(recs) == 5 and all(rec.outcome.resolved for rec in recs)
    assert len(log.read_text().splitlines()) == 5  # every episode's agent started once
    for rec in recs:
        kinds = [e["kind"] for e in traj_mod.read(Path(rec.storage.trajectory))]
        assert kinds.count("episode_start") == 1 and kinds.count("episode_end") == 1
    assert _peak_overlap(_spans(recs)) >= 3  # episodes of one job ran at the same time
    assert r.stdout.count("| squashed") >= 1  # the summary table still prints


@pytest.mark.slow
@pytest.mark.parametrize("claims", ["flock", "lease"])
def test_two_sweeps_at_once_share_the_work(tmp_path, tasks, claims):
    """Each sweep takes the episodes the other does not hold: both run a fair share, none runs twice,
    with either kind of claim."""
    a, b, log, recs = two_sweeps(tmp_path, tasks, [f"claims={claims}"], "1.5")
    assert len(recs) == 10 and all(rec.outcome.resolved for rec in recs)
    pids = [int(line.split()[0]) for line in log.read_text().splitlines()]
    assert len(pids) == 10  # every episode ran once
    by_sweep = {p: pids.count(p) for p in (a.pid, b.pid)}
    assert min(by_sweep.values()) >= 3, by_sweep  # neither sweep sat waiting on the other's episodes
    assert len(results.read_records(tmp_path / "sweep-a")) == len(results.read_records(tmp_path / "sweep-b")) == 10
    assert not list((tmp_path / "results").rglob(".*.lease*"))  # every lease released


@pytest.mark.slow
def test_concurrent_llm_episodes_back_off_on_429_and_keep_the_ledger_exact(tmp_path, tasks):
    """Four episodes at once against a model that takes one request at a time: the refused calls are
    retried (none fails), and the budget ledger settles every episode at its recorded cost."""
    import json
    import urllib.request

    from sdebench.testing import testmodel

    step = {"tool": "submit", "arguments": {}, "repeat": True}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [step], "delay_s": 0.3, "max_inflight": 1}))
    with testmodel.subprocess_server(script) as base:
        r = subprocess.run(
            [sys.executable, "-m", "sdebench.run", *common(tmp_path, tasks), "concurrency=4", "agent=llm",
             "model=testmodel", f"model.api_base={base}", "delivery=squashed", "source=K,H,F,none",
             "max_interventions=1", "agent.retry.backoff_base_s=0.2", "agent.retry.backoff_max_s=1", "agent.retry.max_retries=50",
             "limits.max_cost_usd=0.5", "budget_usd=10", "progress=false"],
            cwd=tmp_path, capture_output=True, text=True, env={**env(), "SDEBENCH_TESTMODEL_KEY": "sk-test-pool"}, timeout=600)
        with urllib.request.urlopen(base.removesuffix("/v1") + "/limited", timeout=10) as resp:
            limited = json.loads(resp.read())["limited"]
    assert r.returncode == 0, r.stderr[-3000:]
    recs = results.read_records(tmp_path / "results")
    assert len(recs) == 4 and not any(rec.outcome.error for rec in recs), [rec.outcome.error for rec in recs]
    assert all(rec.outcome.interventions == 1 and not rec.outcome.resolved for rec in recs)  # submitted twice each, unresolved
    assert limited > 0  # the model did refuse calls, and the agents waited them out
    retried = sum(1 for rec in recs for e in traj_mod.read(Path(rec.storage.trajectory)) if e["kind"] == "retry")
    assert retried >= limited
    (ledger,) = (tmp_path / "results" / ".budget").glob("*.json")
    state = json.loads(ledger.read_text())
    assert state["episodes"] == 4 and state["reserved"] == {}
    assert state["spent_usd"] == pytest.approx(sum(rec.usage.cost_usd for rec in recs)) and state["spent_usd"] > 0
