"""Sweeps on a real Slurm cluster (`hydra/launcher=slurm`): the jobs are sbatch array tasks (sacct says so),
their results equal a local run's, and a job cancelled, cut off by its time limit or on a drained node
loses nothing.

Tier `slurm` (tests/tiers.py): needs a running cluster with accounting, as `.ci/slurm-setup.sh` starts;
without one the tests skip, or fail when SDEBENCH_REQUIRE_SLURM=1 (as in CI).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdebench.agents import trajectory as traj_mod
from sdebench.runs import results, sweep
from tests.runs.test_run import ROOT, env
from tests.runs.test_sweep import SLOW

pytestmark = pytest.mark.slurm


def _cluster_problem() -> str | None:
    """Why no usable cluster is here (None: there is one)."""
    for tool in ("sbatch", "sacct", "scontrol", "sinfo", "scancel"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (bash .ci/slurm-setup.sh)"
    for args in (["scontrol", "ping"], ["sacct", "-n", "-X", "-S", "now"]):
        r = subprocess.run(args, capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or "DOWN" in r.stdout:
            return f"{' '.join(args)}: {(r.stdout + r.stderr).strip()[:200]} (bash .ci/slurm-setup.sh)"
    return None


@pytest.fixture(scope="module", autouse=True)
def cluster() -> None:
    problem = _cluster_problem()
    if problem:
        if os.environ.get("SDEBENCH_REQUIRE_SLURM"):
            pytest.fail(f"no Slurm cluster: {problem}")
        pytest.skip(f"no Slurm cluster: {problem}")
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    subprocess.run(["scontrol", "update", f"nodename={host}", "state=resume"], capture_output=True)


def run(args: list[str], cwd: Path, extra_env: dict[str, str] | None = None, timeout: float = 900):
    return subprocess.run([sys.executable, "-m", "sdebench.run", "-m", *args], cwd=cwd, capture_output=True, text=True,
                          env={**env(), **(extra_env or {})}, timeout=timeout)


def slurm_jobs(sweep_dir: Path) -> list[str]:
    """The Slurm job ids the sweep submitted (submitit keeps a folder per array job)."""
    return sorted({p.name.split("_")[0] for p in (sweep_dir / ".submitit").iterdir() if p.name[0].isdigit()})


def sacct(job: str) -> list[tuple[str, str]]:
    """(array task id, state) of every array task of `job`, from Slurm's accounting."""
    r = subprocess.run(["sacct", "-j", job, "-X", "-n", "-P", "-o", "JobID,State"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return [tuple(line.split("|")[:2]) for line in r.stdout.splitlines() if line.strip()]  # type: ignore[misc]


def outcomes(results_dir: Path) -> dict[str, str]:
    """What an episode's record says of its outcome, by episode key."""
    keep = ("task_id", "agent", "delivery", "task_hash", "config_hash", "resolved", "resolved_at", "interventions",
            "stop_reason", "error", "feedback", "final_diff", "turns", "tool_calls")
    return {r.key: json.dumps([r.flat()[k] for k in keep], sort_keys=True) for r in results.read_records(results_dir)}


# The reference agents over every family's variant 0 in four placements: 232 episodes in 8 array tasks
# of ~29, each running 4 at once on 1 CPU (two array tasks at a time on 2 cores); one submit each
# (max_interventions=0): the oracle resolves at it, noop does not.
MATRIX = ["agent=oracle,noop", "source=H,K,X,none", "select.variant=0", "delivery=squashed", "concurrency=4",
          "max_interventions=0", "limits.max_wall_s=120", "preflight.sandbox=false", "progress=false"]


def test_a_sweep_runs_as_slurm_array_tasks_and_equals_a_local_run(tmp_path):
    t0 = time.monotonic()
    on_slurm = run([*MATRIX, f"tasks_dir={ROOT / 'tasks'}", "hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1",
                    f"results_dir={tmp_path / 'slurm'}", f"hydra.sweep.dir={tmp_path / 'slurm-sweep'}"], tmp_path)
    took = time.monotonic() - t0
    assert on_slurm.returncode == 0, on_slurm.stderr[-3000:]
    (job,) = slurm_jobs(tmp_path / "slurm-sweep")
    tasks = sacct(job)
    assert len(tasks) == 8 and {state for _, state in tasks} == {"COMPLETED"}, tasks
    assert {t for t, _ in tasks} == {f"{job}_{i}" for i in range(8)}
    local = run([*MATRIX, f"tasks_dir={ROOT / 'tasks'}", "hydra/launcher=parallel",
                 f"results_dir={tmp_path / 'local'}", f"hydra.sweep.dir={tmp_path / 'local-sweep'}"], tmp_path)
    assert local.returncode == 0, local.stderr[-3000:]
    got, want = outcomes(tmp_path / "slurm"), outcomes(tmp_path / "local")
    assert len(got) >= 200 and got == want
    recs = results.read_records(tmp_path / "slurm")
    assert all(r.outcome.resolved == (r.identity.agent == "oracle") for r in recs)  # the oracle resolves every task, noop none
    print(f"\n{len(got)} episodes as {len(tasks)} Slurm array tasks in {took:.0f} s")


def _wait(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _records(d: Path) -> int:
    return len(list(d.rglob("*.json"))) if d.is_dir() else 0


# one job of six episodes, one at a time
SLOW_SWEEP = [*SLOW, "select.family='ttlcache,card-fees'", "select.variant=0", "delivery=squashed", "source='K,H,none'",
              "preflight.sandbox=false", "progress=false", "hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1"]


def _resumed_exactly(tmp_path: Path) -> None:
    """After the rerun: every episode has one record, none started after its record existed."""
    recs = results.read_records(tmp_path / "results")
    assert len(recs) == 6 and all(r.outcome.resolved for r in recs)
    assert len({r.key for r in recs}) == 6
    for r in recs:
        ends = [e for e in traj_mod.read(Path(r.storage.trajectory)) if e.get("kind") == "episode_end"]
        assert len(ends) == 1, r.storage.trajectory  # one finished run per record, whatever was cut off before
    stale = [p for p in (tmp_path / "results").rglob(".*.tmp")]
    assert not stale, stale


@pytest.mark.parametrize("fault", ["scancel", "time_limit"])
def test_a_cancelled_or_timed_out_job_resumes_exactly_on_rerun(tmp_path, fault):
    log = tmp_path / "agent.log"
    extra = {"SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": "4"}
    args = [*SLOW_SWEEP, f"tasks_dir={ROOT / 'tasks'}", f"results_dir={tmp_path / 'results'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    if fault == "time_limit":
        # one minute for six episodes of 4 s run one at a time after start-up: cut off, and not requeued
        args += ["hydra.launcher.timeout_min=1", "hydra.launcher.max_num_timeout=0", "hydra.launcher.signal_delay_s=5"]
        extra["SDEBENCH_TEST_AGENT_SLEEP"] = "25"
    proc = subprocess.Popen([sys.executable, "-m", "sdebench.run", "-m", *args], cwd=tmp_path, env={**env(), **extra},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if fault == "scancel":
            _wait(lambda: _records(tmp_path / "results") >= 2, 300, "two finished episodes")
            jobs = slurm_jobs(tmp_path / "sweep")
            subprocess.run(["scancel", *jobs], check=True, timeout=60)
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    assert proc.returncode != 0  # the sweep says its jobs did not complete
    (job,) = slurm_jobs(tmp_path / "sweep")
    states = {s.split()[0] for _, s in sacct(job)}
    assert states & ({"CANCELLED"} if fault == "scancel" else {"TIMEOUT"}), states
    # finished episodes; one the fault interrupted may have left an error record, which a rerun retries
    done_before = sum(r.outcome.stop_reason != "error" for r in results.read_records(tmp_path / "results"))
    assert 0 < done_before < 6 if fault == "scancel" else done_before < 6
    first_started = len(log.read_text().splitlines()) if log.exists() else 0
    extra["SDEBENCH_TEST_AGENT_SLEEP"] = "0.2"
    again = subprocess.run([sys.executable, "-m", "sdebench.run", "-m",
                            *[a for a in args if "timeout" not in a and "signal_delay" not in a]],
                           cwd=tmp_path, env={**env(), **extra}, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    _resumed_exactly(tmp_path)
    # the rerun started only the episodes without a record
    assert len(log.read_text().splitlines()) == first_started + (6 - done_before)


def test_a_job_warned_of_its_time_limit_is_requeued_and_finishes_without_duplicates(tmp_path):
    """submitit's checkpointing: Slurm signals the job 60 s before its 2-minute limit, submitit requeues it,
    and the requeued job skips the episodes already recorded: the sweep completes in one command."""
    log = tmp_path / "agent.log"
    # Six episodes of 12 s (72 s of work), so the warning always comes before the last one ends. The
    # limit is 2 min and the warning is due 60 s before it; Slurm may send it up to 60 s early, but never
    # late. With 8 s episodes, an idle machine finished the sweep before the warning came.
    extra = {"SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": "12"}
    args = [*SLOW_SWEEP, f"tasks_dir={ROOT / 'tasks'}", f"results_dir={tmp_path / 'results'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.launcher.timeout_min=2", "hydra.launcher.signal_delay_s=60",
            "hydra.launcher.max_num_timeout=5"]
    r = run(args, tmp_path, extra, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    _resumed_exactly(tmp_path)
    (job,) = slurm_jobs(tmp_path / "sweep")
    history = subprocess.run(["sacct", "-j", job, "-X", "-n", "-P", "-D", "-o", "JobID,State"], capture_output=True,
                             text=True, timeout=60).stdout.splitlines()
    assert any("REQUEUED" in line or "PREEMPTED" in line for line in history), history  # it was requeued
    started = len(log.read_text().splitlines())
    requeues = sum("REQUEUED" in line or "PREEMPTED" in line for line in history)
    assert 6 <= started <= 6 + requeues  # only an episode cut off by a requeue starts again


def _node_state(host: str) -> str:
    r = subprocess.run(["sinfo", "-h", "-N", "-n", host, "-o", "%T"], capture_output=True, text=True, timeout=30)
    return r.stdout.strip().lower()


def _job_state(job: str) -> str:
    r = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True, timeout=30)
    return " ".join(r.stdout.split()).lower()


@pytest.mark.parametrize("claims", ["flock", "lease"])
def test_a_node_drained_mid_sweep_resumes_exactly_on_rerun(tmp_path, claims):
    """Slurm drains a node gently (its running tasks go on, no new one starts), so an admin who wants the
    node now also cancels them. After `state=resume` the same command runs what is missing and takes
    over the claims the killed task left, in either claim mode."""
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    log = tmp_path / "agent.log"
    extra = {"SDEBENCH_TEST_AGENT_LOG": str(log), "SDEBENCH_TEST_AGENT_SLEEP": "4"}
    args = [*SLOW_SWEEP, f"tasks_dir={ROOT / 'tasks'}", f"results_dir={tmp_path / 'results'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}", f"claims={claims}"]
    proc = subprocess.Popen([sys.executable, "-m", "sdebench.run", "-m", *args], cwd=tmp_path, env={**env(), **extra},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: _records(tmp_path / "results") >= 2, 300, "two finished episodes")
        (job,) = slurm_jobs(tmp_path / "sweep")
        try:
            subprocess.run(["scontrol", "update", f"nodename={host}", "state=drain", "reason=sdebench-test"],
                           check=True, timeout=60)
            time.sleep(1)
            assert _node_state(host) in ("draining", "drng"), _node_state(host)  # drained only once its jobs end
            assert "running" in _job_state(job), _job_state(job)
            subprocess.run(["scancel", job], check=True, timeout=60)
            _wait(lambda: _node_state(host) in ("drained", "drain"), 90, "the node drained")
        finally:  # back in service as soon as the drain is seen through: other jobs may be waiting for it
            subprocess.run(["scontrol", "update", f"nodename={host}", "state=resume"], timeout=60)
        proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    assert proc.returncode != 0  # the sweep says its job did not complete
    done_before = sum(r.outcome.stop_reason != "error" for r in results.read_records(tmp_path / "results"))
    assert 0 < done_before < 6
    first_started = len(log.read_text().splitlines())
    # the cancelled task was killed mid-episode: under lease its lease is left behind, under flock its lock died
    left = list((tmp_path / "results").rglob(".*.lease"))
    assert (len(left) == 1) if claims == "lease" else not left, left
    _flocks_free(tmp_path / "results")
    extra["SDEBENCH_TEST_AGENT_SLEEP"] = "0.2"
    again = run(args, tmp_path, extra, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    _resumed_exactly(tmp_path)
    assert len(log.read_text().splitlines()) == first_started + (6 - done_before)  # nothing lost, nothing twice
    if claims == "lease":  # the stale lease was taken over at once (its holder is gone from this host)
        assert "took over a stale lease" in "".join(p.read_text() for p in (tmp_path / "sweep").rglob("run.log"))
    assert not list((tmp_path / "results").rglob(".*.lease*"))  # every lease released
    _flocks_free(tmp_path / "results")


def _flocks_free(results_dir: Path) -> None:
    """No process holds the flock claim of any episode under `results_dir`."""
    for claim in results_dir.rglob(".*.claim"):
        handle = sweep.try_claim(claim.with_name(claim.name[1:].removesuffix(".claim")))
        assert handle is not None, claim
        sweep.release(handle)
