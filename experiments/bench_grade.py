"""The two-phase grade's cost against a bare pytest run of the same tests.

    PYTHONPATH=$PWD python experiments/bench_grade.py [--task tasks/<id>] [--runs 7] [--docker-image IMG]

Prints, for one task (billing-rounding-v0-F by default, else the first in tasks/, else the
built-in sample task), the median wall time of
- a bare `python -m pytest` on the host (plugin autoload off) of every graded test once: the
  visible tests as written and the observation tests, with a no-op `observe` fixture;
- a full grade() of the oracle-patched checkout on the local (bubblewrap) backend: the sanitised
  copy, both phases in their own sandboxes (runners started at once, phase 2 let through once
  phase 1 is over), the host-side comparison;
- the same on docker when an engine is up (containers pre-started by the factory, each used once);
and each ratio to the bare run (targets: <= 1.5 local, <= 2.0 docker). Runs are interleaved so
background load hits every side alike; on a shared machine, rerun when it is quieter.

After each docker grade, and outside the timed region, the factory is let settle: the used
containers removed and their replacements started. In the episode loop that work overlaps the
agent's next turn (model calls, its tools), which follows every grade; timed here, it would
land on the next bare run instead and flatter the ratio.
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
DEFAULT_TASK = "billing-rounding-v0-F"
NOOP_OBSERVE = '''import contextlib

import pytest


class _Observe:
    def __call__(self, value, name=None):
        pass

    def compare(self, *chain):
        pass

    def truth(self, value):
        pass

    @contextlib.contextmanager
    def raises(self, match=None):
        try:
            yield
        except Exception:
            pass


@pytest.fixture
def observe():
    return _Observe()
'''
TARGETS = {"local": 1.5, "docker": 2.0}


def pick_task(arg: str | None, tmp: Path) -> task_mod.Task:
    """The task to measure."""
    if arg:
        return task_mod.load(arg)
    tasks = ROOT / "tasks"
    if (tasks / DEFAULT_TASK).is_dir():
        return task_mod.load(tasks / DEFAULT_TASK)
    found = task_mod.discover(tasks) if tasks.is_dir() else []
    return task_mod.load(found[0]) if found else write_sample_task(tmp / "sample")


def bare_workspace(task: task_mod.Task, dest: Path) -> tuple[Path, list[str]]:
    """The oracle checkout with the observation tests beside the visible ones; the files to run."""
    ws = checkout(task, dest, task.oracle_patch)
    files = sorted({i.split("::")[0] for g in ("FAIL_TO_PASS", "PASS_TO_PASS") for i in task.tests.groups()[g]})
    overlay = {**task.observed_files(), **task.hidden_files()}
    for rel, content in overlay.items():
        # Observation versions of visible files go beside them, so both run in one process.
        target = rel if rel not in files else rel[:-3] + "_observed.py"
        (ws / target).parent.mkdir(parents=True, exist_ok=True)
        (ws / target).write_text(content)
        files.append(target)
    (ws / "conftest.py").write_text(NOOP_OBSERVE)
    return ws, sorted(set(files))


def bare_run(ws: Path, files: list[str]) -> float:
    """One bare pytest run of every graded test; returns wall seconds."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "/dev/null",
                           "--rootdir=.", *files], cwd=ws, env=env, capture_output=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bare run failed on the oracle checkout:\n{proc.stdout.decode()[-2000:]}")
    return took


def timed_grade(task: task_mod.Task, ws: Path, factory) -> float:
    """Wall seconds of one full grade, which must resolve; then the factory's background work is let finish."""
    start = time.perf_counter()
    g = grade(task, ws, factory)
    took = time.perf_counter() - start
    if not g.resolved:
        raise SystemExit(f"oracle grade did not resolve: {g.error or g.feedback}")
    if hasattr(factory, "settle"):
        factory.settle()
    return took


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", help=f"a task dir (default: tasks/{DEFAULT_TASK}, else the first, else the sample task)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--docker-image", default=os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp_s:
        tmp = Path(tmp_s)
        task = pick_task(args.task, tmp)
        ws = checkout(task, tmp / "ws" / "repo", task.oracle_patch)
        bare_ws, files = bare_workspace(task, tmp / "bare" / "repo")
        pristine_tree(task)  # the per-process cache is warm in any sweep after the first grade
        sides = {"local": make_factory({"backend": "local", "tasks_dir": str(task.path.parent)})}
        reason = unavailable_reason(args.docker_image)
        if reason is None:
            sides["docker"] = make_factory({"backend": "docker", "image": args.docker_image})
            sides["docker"].settle()  # the first pre-started containers come up, as in any sweep
        # One warm-up of each, then interleaved rounds so background load hits all sides alike.
        bare_run(bare_ws, files)
        for f in sides.values():
            timed_grade(task, ws, f)
        times: dict[str, list[float]] = {"bare": [], **{k: [] for k in sides}}
        try:
            for _ in range(args.runs):
                times["bare"].append(bare_run(bare_ws, files))
                for name, f in sides.items():
                    times[name].append(timed_grade(task, ws, f))
        finally:
            for f in sides.values():
                f.cleanup()
        bare = statistics.median(times["bare"])
        n_tests = sum(len(g) for g in task.tests.groups().values())
        print(f"task {task.id}: {n_tests} graded test ids ({len(files)} files), {args.runs} interleaved runs, medians")
        print(f"bare pytest run (host)       {bare:7.3f} s")
        for name in ("local", "docker"):
            if name in times:
                m = statistics.median(times[name])
                print(f"two-phase grade, {name:<11} {m:7.3f} s   ratio {m / bare:.2f}  (target <= {TARGETS[name]})")
            else:
                print(f"two-phase grade, {name:<11} skipped: {reason}")


if __name__ == "__main__":
    main()
