"""Episodes per minute of one job at `concurrency` N = 1, 4, 16, 64, and the CPU each episode costs; prints figures.

    python experiments/bench_concurrency.py [--levels 1,4,16,64] [--delay 2.0] [--sandbox local]

Two agents: the oracle (no model: the harness and grading alone) and the built-in LLM agent against
the scripted test model, whose every reply waits `--delay` seconds (a real model's latency) and
calls `submit`; with `max_interventions=2` an episode makes three model calls and three grades.
Each level runs a fresh results dir over the first E committed tasks (E = 4, 8, 16, 64 for N = 1, 4,
16, 64: a level's episodes are one or a few rounds of its workers). Per level it prints the wall
time, episodes per minute, the CPU seconds per episode of the harness process itself (its threads:
episode loops, the agent, the gateway) and of everything it ran (sandboxes, test runs in grading),
and the machine's load average at the start (the benchmark shares the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPISODES = {1: 4, 4: 8, 16: 16, 64: 64}
# the run command, writing its own CPU seconds (all its threads) to argv[1] on the way out
HARNESS = ("import atexit, resource, runpy, sys\n"
           "out = sys.argv[1]\n"
           "atexit.register(lambda: open(out, 'w').write(str(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))))\n"
           "sys.argv = ['sdebench run', *sys.argv[2:]]\n"
           "runpy.run_module('sdebench.run', run_name='__main__')\n")


def task_ids(tasks_dir: Path, n: int) -> list[str]:
    """The first `n` task ids of `tasks_dir` (sorted)."""
    ids = sorted(p.parent.name for p in tasks_dir.glob("*/task.toml"))
    if len(ids) < n:
        sys.exit(f"bench_concurrency: {tasks_dir} has {len(ids)} tasks, {n} needed")
    return ids[:n]


def span_s(recs: list) -> float:
    """From the first episode's start to the last one's end (start-up and imports left out)."""
    from sdebench.agents import trajectory

    ts = [e["t"] for r in recs for e in trajectory.read(Path(r.trajectory)) if e.get("kind") in ("episode_start", "episode_end")]
    return max(ts) - min(ts) if ts else float("nan")


def run_level(args: list[str], tmp: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Run one job; its wall time, the harness process's CPU seconds and all CPU seconds (harness + children)."""
    cpu_file = tmp / "harness-cpu"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", HARNESS, str(cpu_file), *args], cwd=tmp, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"bench_concurrency: the run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, float(cpu_file.read_text()), total


def main() -> None:
    """Measure and print."""
    from sdebench.runs import results
    from sdebench.testing import testmodel

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks-dir", type=Path, default=ROOT / "tasks")
    ap.add_argument("--levels", default="1,4,16,64")
    ap.add_argument("--delay", type=float, default=2.0, help="the scripted model's reply delay in seconds")
    ap.add_argument("--agents", default="oracle,llm")
    ap.add_argument("--sandbox", default="local")
    opts = ap.parse_args()
    levels = [int(x) for x in opts.levels.split(",")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SDEBENCH_TESTMODEL_KEY": "sk-bench-concurrency"}
    print(f"cpus={os.cpu_count()} sandbox={opts.sandbox} model delay={opts.delay:g} s "
          f"(llm: 3 model calls and 3 grades per episode; oracle: 1 grade)")
    print("wall s: the whole command; span s: first episode start to last episode end; ep/min over the span")
    print(f"{'agent':7} {'N':>3} {'episodes':>8} {'wall s':>8} {'span s':>7} {'ep/min':>7} {'harness cpu s/ep':>17} "
          f"{'all cpu s/ep':>13} {'errors':>6} {'load1':>6}")
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp_s:
        tmp = Path(tmp_s)
        script = tmp / "script.json"
        script.write_text(json.dumps({"steps": [{"tool": "submit", "arguments": {}, "repeat": True}],
                                      "delay_s": opts.delay}))
        with testmodel.subprocess_server(script) as base:
            for agent in opts.agents.split(","):
                for n in levels:
                    e = EPISODES.get(n, max(n, 4))
                    out = tmp / f"{agent}-{n}"
                    model = (["agent=llm", "model=testmodel", f"model.api_base={base}", "max_interventions=2"]
                             if agent == "llm" else [f"agent={agent}"])
                    args = [f"tasks_dir={opts.tasks_dir}", f"results_dir={out / 'results'}",
                            f"hydra.run.dir={out / 'run'}", f"sandbox={opts.sandbox}", "delivery=squashed",
                            f"select.ids={','.join(task_ids(opts.tasks_dir, e))}", f"concurrency={n}",
                            "progress=false", *model]
                    load = os.getloadavg()[0]
                    wall, harness, total = run_level(args, tmp, env)
                    recs = results.read_records(out / "results")
                    errors = sum(1 for r in recs if r.outcome.stop_reason == "error")
                    span = span_s(recs)
                    print(f"{agent:7} {n:>3} {len(recs):>8} {wall:>8.1f} {span:>7.1f} {len(recs) / span * 60:>7.1f} "
                          f"{harness / max(len(recs), 1):>17.2f} {total / max(len(recs), 1):>13.2f} {errors:>6} "
                          f"{load:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
