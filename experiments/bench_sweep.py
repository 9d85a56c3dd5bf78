"""Sweep throughput and single-run latency of `python -m sdebench.run`; prints figures.

    python experiments/bench_sweep.py [--family ttlcache] [--sandbox local] [--repeat 3]

1. Episodes per second of the oracle agent over every delivery for one family's tasks, with the
   joblib launcher at 1 and at 2 workers (fresh results dir each time, so nothing is skipped).
2. Start-to-finish wall time of `python -m sdebench.run agent=noop` on one task (target < 2 s).
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

ROOT = Path(__file__).resolve().parents[1]


def sandbox_args(name: str, tmp: Path) -> list[str]:
    """Overrides selecting the sandbox; a backend config missing from conf/ is supplied from tmp."""
    if (ROOT / "conf" / "sandbox" / f"{name}.yaml").is_file():
        return [f"sandbox={name}"]
    extra = tmp / "extra-conf" / "sandbox"
    extra.mkdir(parents=True, exist_ok=True)
    (extra / f"{name}.yaml").write_text(f"backend: {name}\n")
    return [f"hydra.searchpath=[file://{extra.parent}]", f"sandbox={name}"]


def run(args: list[str], cwd: Path) -> float:
    """Run sdebench.runs.run with `args`; return its wall time; fail loudly on a non-zero exit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench_sweep: sdebench.runs.run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return took


def count_records(results_dir: Path) -> int:
    """Record files under a results dir."""
    return len(list(results_dir.rglob("*.json")))


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks-dir", default=str(ROOT / "tasks"))
    ap.add_argument("--family", default="ttlcache")
    ap.add_argument("--task", default=None, help="task id for the single-run timing (default: first of the family)")
    ap.add_argument("--sandbox", default="local")
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp_s:
        tmp = Path(tmp_s)
        base = [*sandbox_args(opts.sandbox, tmp), f"tasks_dir={opts.tasks_dir}"]
        print(f"sandbox={opts.sandbox} family={opts.family} cpus={os.cpu_count()}")
        for workers in (1, 2):
            out = tmp / f"sweep-{workers}"
            args = [
                "-m",
                *base,
                f"results_dir={out / 'results'}",
                f"hydra.sweep.dir={out / 'sweep'}",
                "hydra/launcher=parallel",
                f"hydra.launcher.n_jobs={workers}",
                "agent=oracle",
                "delivery=full,squashed,memtool,inject,oracle",
                "source=all",
                f"select.family={opts.family}",
            ]
            took = run(args, tmp)
            n = count_records(out / "results")
            print(f"oracle sweep, joblib n_jobs={workers}: {n} episodes in {took:.2f} s = {n / took:.2f} episodes/s")

        task = opts.task
        if task is None:
            names = sorted(p.name for p in Path(opts.tasks_dir).glob(f"{opts.family}-*") if (p / "task.toml").is_file())
            if not names:
                sys.exit(f"bench_sweep: no task of family {opts.family} in {opts.tasks_dir}")
            task = names[0]
        times = []
        for i in range(opts.repeat):
            out = tmp / f"noop-{i}"
            args = [*base, f"results_dir={out / 'results'}", f"hydra.run.dir={out / 'run'}", "agent=noop", f"select.ids={task}"]
            times.append(run(args, tmp))
        print(
            f"python -m sdebench.run agent=noop on {task}: median {statistics.median(times):.2f} s, "
            f"min {min(times):.2f} s over {len(times)} runs (target < 2 s)"
        )


if __name__ == "__main__":
    main()
