"""Sweeps that are safe to run: per-episode claims, workers dying with their sweep, exit status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sdebench.agents import trajectory as traj_mod
from sdebench.runs import results, sweep
from tests.minitask import build_all
from tests.runs.test_run import ROOT, common, env, sandbox_args

SLOW = ["agent=oracle", "agent.name=tests.runs.slow_agent:SlowOracle"]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tasks")
    build_all(out)
    return out


def popen(args, cwd, extra_env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "sdebench.run", *args], cwd=cwd, env={**env(), **(extra_env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_a_claim_is_exclusive_and_dies_with_its_holder(tmp_path):
    record = tmp_path / "t" / "ep.json"
    waited = []
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from sdebench.runs import sweep\n"
        f"with sweep.claim(Path({str(record)!r})):\n    print('held', flush=True); time.sleep(60)")],
        env=env(), stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    got = threading.Event()

    def take():
        with sweep.claim(record, on_wait=lambda: waited.append(1)):
            got.set()

    t = threading.Thread(target=take, daemon=True)
    t.start()
    time.sleep(0.5)
    assert waited == [1] and not got.is_set()  # the second claimant waits
    holder.kill()
    holder.wait()
    assert got.wait(10)  # the lock died with its holder
    assert not list(tmp_path.rglob("*.json"))  # the claim file is hidden from record readers


def two_sweeps(tmp_path: Path, tasks: Path, extra_args: list[str], sleep: str) -> tuple:
    """Run the same ten-episode sweep twice at once on one results dir; both must exit 0.
    Returns the two processes, the agents' start log and the records."""
    log = tmp_path / "agent.log"
    args = ["-m", *common(tmp_path, tasks), *SLOW, "delivery=full,squashed", "progress=false", *extra_args]
    extra = {"SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": sleep}
    a = popen([*args, f"hydra.sweep.dir={tmp_path / 'sweep-a'}"], tmp_path, extra)
    b = popen([*args, f"hydra.sweep.dir={tmp_path / 'sweep-b'}"], tmp_path, extra)
    _, err_a = a.communicate(timeout=600)
    _, err_b = b.communicate(timeout=600)
    assert a.returncode == 0 and b.returncode == 0, err_a[-2000:] + err_b[-2000:]
    return a, b, log, results.read_records(tmp_path / "results")


@pytest.mark.slow
def test_two_sweeps_at_once_run_each_episode_once(tmp_path, tasks):
    _, _, log, recs = two_sweeps(tmp_path, tasks, ["hydra/launcher=parallel"], "0.4")
    assert len(recs) == 10 and all(r.outcome.resolved for r in recs)
    assert len(log.read_text().splitlines()) == 10  # every episode's agent started exactly once
    for r in recs:
        events = traj_mod.read(Path(r.storage.trajectory))
        kinds = [e["kind"] for e in events]
        assert kinds.count("episode_start") == 1 and kinds.count("episode_end") == 1, r.storage.trajectory
        assert kinds[0] == "episode_start" and kinds[-1] == "episode_end"
        start = events[0]
        assert (start["task_id"], start["delivery"]) == (r.identity.task_id, r.identity.delivery)
        assert [e["i"] for e in events] == list(range(1, len(events) + 1))  # one writer
    both = results.read_records(tmp_path / "sweep-a") + results.read_records(tmp_path / "sweep-b")
    assert len(both) == 20  # each sweep's summary lists all ten (run or reused)


@pytest.mark.slow
def test_workers_die_with_a_killed_sweep(tmp_path, tasks):
    log = tmp_path / "agent.log"
    args = ["-m", *common(tmp_path, tasks), *SLOW, "delivery=full,squashed", "hydra/launcher=parallel", "progress=false"]
    proc = popen(args, tmp_path, {"SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": "60"})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (log.exists() and len(log.read_text().splitlines()) >= 2):
        time.sleep(0.2)
    workers = {int(line.split()[0]) for line in log.read_text().splitlines()}
    assert workers and proc.pid not in workers
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.2)
    alive = [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in Path(f"/proc/{w}/status").read_text()]
    assert not alive, f"workers still running after the sweep died: {alive}"
    assert not list((tmp_path / "results").rglob("*.json"))  # nothing was half-written


def test_errors_no_match_and_malformed_tasks_exit_non_zero(tmp_path, tasks):
    base = common(tmp_path, tasks)
    missing = tmp_path / "missing.patch"
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *base, "agent=patch", f"agent.patch={missing}",
                        "source=K"], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    # agent=patch checks its file at start-up only for model runs: here the episode errors
    assert r.returncode == 1 and "1 episode(s) ended in an error" in r.stderr, r.stderr[-2000:]
    none = subprocess.run([sys.executable, "-m", "sdebench.run", *base, "select.family=no-such"], cwd=tmp_path,
                          env=env(), capture_output=True, text=True, timeout=300)
    last = none.stderr.strip().splitlines()[-1]
    assert none.returncode == 1 and "matched no task" in last and "matches source=all select.family=no-such" in last
    bad_dir = tmp_path / "with-bad"
    bad_dir.mkdir()
    for d in tasks.iterdir():
        if d.name.endswith("-K"):
            os.symlink(d, bad_dir / d.name)
    (bad_dir / "broken-v0-K").mkdir()
    (bad_dir / "broken-v0-K" / "task.toml").write_text("id = [\n")
    mal = subprocess.run([sys.executable, "-m", "sdebench.run", *sandbox_args(tmp_path), f"tasks_dir={bad_dir}",
                          f"results_dir={tmp_path / 'results'}", f"hydra.run.dir={tmp_path / 'out2'}", "agent=oracle"],
                         cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert mal.returncode == 1 and "1 task dir(s) skipped as malformed" in mal.stderr, mal.stderr[-2000:]
    assert "| K | 1/1 (0.0) |" in mal.stdout


def test_a_failed_job_of_a_sweep_exits_non_zero(tmp_path, tasks):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the results dir should be (unwritable, even for root)")
    args = ["-m", *common(tmp_path, tasks), "agent=oracle", f"results_dir={blocked / 'results'}", "source=K,F"]
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=tmp_path, env=env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1 and "2 job(s) failed" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("override,expected", [
    ("delivery=nope", "delivery=nope: no such delivery (choose full, inject, memtool, oracle, squashed)"),
    ("agent=oracle,nope", "agent=nope: no such agent (choose "),
    ("no_such_key=1", "no_such_key: no such config key"),
    ("limits.max_turnz=3", "limits.max_turnz: no such config key; did you mean limits.max_turns?"),
    ("+select.famly=ttlcache", "select.famly: no such config key; did you mean select.family?"),
    ("+foo=1", "foo: no such config key"),
    ("max_interventions=many", "max_interventions must be a whole number, got 'many'"),
    ("grading.timeout=soon", "grading.timeout must be a number, got 'soon'"),
    ("rerun=maybe", "rerun must be true or false, got 'maybe'"),
    ("agent=claude-code agent.port=abc", "agent.port must be a whole number, got 'abc'"),
    ("agent=claude-code agent.prot=1", "agent.prot: no such config key; did you mean agent.port?"),
    ("agent=llm agent.retry.max_retries=lots", "agent.retry.max_retries must be a whole number, got 'lots'"),
])
def test_unknown_config_values_are_one_line(tmp_path, tasks, override, expected):
    args = [*common(tmp_path, tasks), *override.split()] + (["-m"] if "," in override else [])
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=tmp_path, env=env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("sdebench run: error: " + expected)


def test_a_comma_list_filter_needs_no_quoting_in_a_single_run(tmp_path, tasks):
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *common(tmp_path, tasks), "agent=oracle",
                        "delivery=squashed", "source=K,F"], cwd=tmp_path, env=env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| K | 1/1 (0.0) |" in r.stdout and "| F | 1/1 (0.0) |" in r.stdout


def test_ctrl_c_is_one_line_and_removes_the_episode_dir(tmp_path, tasks):
    log = tmp_path / "agent.log"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # faulthandler on: a run that does not stop is made to print every thread's stack (SIGABRT) below;
    # SIGINT back to its default in the child, whatever this worker process inherited
    proc = popen([*common(tmp_path, tasks), *SLOW, "source=K"], tmp_path,
                 {"SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": "60", "TMPDIR": str(tmp),
                  "PYTHONFAULTHANDLER": "1"}, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Ctrl-C while the agent runs, as the test means: on a loaded machine start-up alone can take a minute
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not log.exists():
        time.sleep(0.1)
    assert log.exists(), "the agent never started"
    assert [p for p in tmp.iterdir() if p.is_dir()]  # the episode's workspace dir
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the run did not stop within 60 s of Ctrl-C; its threads:\n{err[-6000:]}")
    assert proc.returncode == sweep.EXIT_INTERRUPTED
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("sdebench run: interrupted")
    assert not [p for p in tmp.iterdir() if p.is_dir()], list(tmp.iterdir())


def test_problem_lines_are_one_per_kind(tmp_path, monkeypatch):
    status = tmp_path / "status.jsonl"
    monkeypatch.setenv(sweep.STATUS_ENV, str(status))
    sweep.report("episode_error", "a: boom")
    sweep.report("episode_error", "b: boom")
    sweep.report("no_match", "x")
    lines = sweep.read_problems(status)
    assert lines[0].startswith("2 episode(s) ended in an error") and lines[1].startswith("1 job(s) matched no task: x")
    assert json.loads(status.read_text().splitlines()[0])["kind"] == "episode_error"
    assert str(ROOT)
