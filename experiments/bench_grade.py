"""Grading cost against a bare pytest run of the same tests.

    PYTHONPATH=$PWD python experiments/bench_grade.py [--task tasks/<id>] [--runs 7] [--docker-image IMG]

Prints, for one task (the first in tasks/, else the built-in sample task), the median wall time
of a bare `python -m pytest` of the graded tests (plugin autoload off, on the oracle-patched
checkout with the hidden tests in place) and of a full grade() of the same checkout on the local
(bubblewrap) backend, their ratio, and the docker backend's figures when an engine is up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sdebench.grading.grade import grade, pristine_tree
from sdebench.sandbox import make_factory
from sdebench.sandbox.docker import unavailable_reason
from sdebench.tasks import record as task_mod
from sdebench.testing.sample_task import checkout, write_sample_task

ROOT = Path(__file__).resolve().parents[1]


def pick_task(arg: str | None, tmp: Path) -> task_mod.Task:
    """The task to measure."""
    if arg:
        return task_mod.load(arg)
    tasks = ROOT / "tasks"
    found = task_mod.discover(tasks) if tasks.is_dir() else []
    return task_mod.load(found[0]) if found else write_sample_task(tmp / "sample")


def bare_run(task: task_mod.Task, ws: Path) -> float:
    """One bare pytest run of every graded test file; returns wall seconds."""
    files = sorted({i.split("::")[0] for g in task.tests.groups().values() for i in g})
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
                          cwd=ws, env=env, capture_output=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bare run failed on the oracle checkout:\n{proc.stdout.decode()[-2000:]}")
    return took


def timed_grade(task: task_mod.Task, ws: Path, factory) -> float:
    """Wall seconds of one full grade, which must resolve."""
    start = time.perf_counter()
    g = grade(task, ws, factory)
    took = time.perf_counter() - start
    if not g.resolved:
        raise SystemExit(f"oracle grade did not resolve: {g.error or g.feedback}")
    return took


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", help="a task dir (default: first in tasks/, else the sample task)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--docker-image", default=os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sdebench-bench-") as tmp_s:
        tmp = Path(tmp_s)
        task = pick_task(args.task, tmp)
        ws = checkout(task, tmp / "ws", task.oracle_patch)
        bare_ws = checkout(task, tmp / "bare", task.oracle_patch)
        for rel, content in task.hidden_files().items():
            (bare_ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (bare_ws / rel).write_text(content)
        pristine_tree(task)  # the per-process cache is warm in any sweep after the first grade
        local = make_factory({"backend": "local", "tasks_dir": str(task.path.parent)})
        reason = unavailable_reason(args.docker_image)
        docker = None if reason else make_factory({"backend": "docker", "image": args.docker_image})
        # One warm-up of each, then interleaved rounds so background load hits all sides alike.
        bare_run(task, bare_ws)
        timed_grade(task, ws, local)
        if docker:
            timed_grade(task, ws, docker)
        times: dict[str, list[float]] = {"bare": [], "local": [], "docker": []}
        try:
            for _ in range(args.runs):
                times["bare"].append(bare_run(task, bare_ws))
                times["local"].append(timed_grade(task, ws, local))
                if docker:
                    times["docker"].append(timed_grade(task, ws, docker))
        finally:
            if docker:
                docker.cleanup()
        bare = statistics.median(times["bare"])
        full = statistics.median(times["local"])
        n_tests = sum(len(g) for g in task.tests.groups().values())
        print(f"task {task.id}: {n_tests} graded tests, {args.runs} interleaved runs, medians")
        print(f"bare pytest run           {bare:7.3f} s")
        print(f"full grade, local (bwrap) {full:7.3f} s   ratio {full / bare:.2f}  (target <= 1.3)")
        if docker:
            full_d = statistics.median(times["docker"])
            print(f"full grade, docker        {full_d:7.3f} s   ratio {full_d / bare:.2f}  (image {args.docker_image})")
        else:
            print(f"full grade, docker        skipped: {reason}")


if __name__ == "__main__":
    main()
