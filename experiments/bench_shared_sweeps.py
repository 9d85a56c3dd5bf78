"""Two identical sweeps on one results_dir share the work: the wall time of one sweep alone, then of two
started together (each takes the next episode the other does not hold); prints figures.

    python experiments/bench_shared_sweeps.py [--sleep 3] [--deliveries full,squashed]

The agent is the oracle slowed by `--sleep` seconds per episode (tests/runs/slow_agent.py), standing in
for an agent that waits on its model; the sweep is every placement of one family's variant 0 under
each delivery (10 episodes with the defaults). Ideal: two together take about half of one alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(tmp: Path, name: str, opts: argparse.Namespace) -> list[str]:
    """The sweep command, writing into tmp/results with its own sweep dir `name`."""
    return [sys.executable, "-m", "sdebench.run", "-m", "agent=oracle", "agent.name=tests.runs.slow_agent:SlowOracle",
            f"tasks_dir={opts.tasks_dir}", f"select.family={opts.family}", "select.variant=0",
            f"delivery={opts.deliveries}", f"results_dir={tmp / 'results'}", f"hydra.sweep.dir={tmp / name}",
            "progress=false", "preflight.sandbox=false"]


def timed(cmds: list[list[str]], env: dict[str, str]) -> float:
    """Start every command at once; the wall time until all have exited (each must exit 0)."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for c in cmds]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"bench_shared_sweeps: a sweep failed ({p.returncode}): {err.strip()[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks-dir", default=str(ROOT / "tasks"))
    ap.add_argument("--family", default="ttlcache")
    ap.add_argument("--deliveries", default="full,squashed")
    ap.add_argument("--sleep", type=float, default=3.0)
    opts = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SDEBENCH_TEST_AGENT_SLEEP": str(opts.sleep)}
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as a, tempfile.TemporaryDirectory(prefix="bench-shared-") as b:
        alone = timed([command(Path(a), "sweep", opts)], env)
        log = Path(b) / "agent.log"
        together = timed([command(Path(b), "sweep-1", opts), command(Path(b), "sweep-2", opts)],
                         {**env, "SDEBENCH_TEST_AGENT_LOG": str(log)})
        n = len(list((Path(a) / "results").rglob("*.json")))
        pids = [line.split()[0] for line in log.read_text().splitlines()]
        shares = sorted(pids.count(p) for p in set(pids))
    print(f"{n} episodes, {opts.sleep:g} s of agent wait each")
    print(f"one sweep alone:        {alone:6.1f} s")
    print(f"two identical at once:  {together:6.1f} s ({together / alone:.0%} of one alone); "
          f"episodes run by each: {shares}, {len(pids)} in all (none twice)")


if __name__ == "__main__":
    main()
