"""How much the held-out phase can tell an agent through the time a grade takes.

    PYTHONPATH=$PWD python experiments/bench_timing_channel.py [--runs 6] [--backend local]

The agent can read the clock before it submits and when the feedback arrives, and code running in
phase 2 decides how long phase 2 takes (within its limits). This grades the sample task's oracle
fix with phase-2 code that sleeps d seconds at import (d in --delays, runs interleaved) and
prints, per d, the median wall time of grade(); the noise (standard deviation of the wall time
minus d, pooled); and the channel's capacity per submit: the number of delays an observer tells
apart with 4 sigma between neighbours, over the range phase-2 code controls (up to the phase's
`timeout`, 300 s by default), as bits = log2(1 + range / (4 sigma)). An upper bound in practice:
phase-2 code knows the held-out tests' inputs, never their expected values.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from sdebench.grading.grade import grade
from sdebench.grading.options import GradeOptions
from sdebench.sandbox import make_factory
from sdebench.testing.sample_task import HIDDEN_FILE, checkout, write_sample_task

SLEEPER = '''
import os as _os, time as _time
if _os.path.exists("{hidden}"):
    _time.sleep({delay})
'''


def main() -> None:
    """Measure and print the timing channel's noise and capacity."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--backend", default="local")
    ap.add_argument("--delays", default="0,0.25,0.5,1,2")
    ap.add_argument("--docker-image", default="sdebench-py:test")
    args = ap.parse_args()
    delays = [float(d) for d in args.delays.split(",")]
    with tempfile.TemporaryDirectory(prefix="timing-") as tmp:
        root = Path(tmp)
        task = write_sample_task(root / "store" / "sample")
        cfg = {"backend": args.backend, "tasks_dir": str(root / "store")}
        if args.backend == "docker":
            cfg = {"backend": "docker", "image": args.docker_image}
        factory = make_factory(cfg)
        spaces = {}
        for d in delays:
            ws = checkout(task, root / f"ws-{d}", task.oracle_patch)
            p = ws / "shop" / "pricing.py"
            p.write_text(p.read_text() + SLEEPER.format(hidden=HIDDEN_FILE, delay=d))
            spaces[d] = ws
        times: dict[float, list[float]] = {d: [] for d in delays}
        try:
            for _ in range(args.runs):
                for d in delays:
                    if hasattr(factory, "settle"):
                        factory.settle()
                    t = time.monotonic()
                    g = grade(task, spaces[d], factory)
                    times[d].append(time.monotonic() - t)
                    assert g.resolved and g.error is None, g.feedback
        finally:
            factory.cleanup()
    base = statistics.median(times[delays[0]])
    residuals = []
    print(f"backend {args.backend}, sample task, {args.runs} interleaved runs per delay")
    print(f"{'phase-2 delay (s)':>18} {'median grade (s)':>17} {'minus delay':>12}")
    for d in delays:
        med = statistics.median(times[d])
        print(f"{d:>18.2f} {med:>17.3f} {med - d - base:>+12.3f}")
        m = statistics.mean(times[d])
        residuals += [x - m for x in times[d]]
    sigma = statistics.pstdev(residuals)
    span = GradeOptions.timeout
    bits = math.log2(1 + span / (4 * sigma))
    print(f"noise (pooled standard deviation): {sigma:.3f} s")
    print(f"capacity over a {span:g} s range: {bits:.1f} bits per submit "
          f"({bits * 6:.0f} bits over the 6 submits of an episode)")


if __name__ == "__main__":
    main()
