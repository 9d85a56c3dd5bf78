"""Seconds per task for generation plus validation (target: under 1 s per task on 2 cores).

    python experiments/bench_generate.py [--families a,b] [--jobs 2]

Generates into a temporary dir, so tasks/ is untouched. Large repos (over LARGE_COMMITS commits)
are reported separately, as their cost is dominated by the repo size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sdebench.generation import generate
from sdebench.tasks.record import load
from sdebench.tasks.selection import comma_list

LARGE_COMMITS = 200


def main() -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", help="comma-separated families (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--generators", type=Path, default=Path("generators"))
    args = ap.parse_args()
    families = set(comma_list(args.families) or ()) or None
    jobs, errors = generate.plan(args.generators, families, None, None)
    for e in errors:
        print("error:", e, file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        outcomes = generate.generate(jobs, Path(tmp), {"backend": "unsafe_local"}, args.jobs, progress=False)
        wall = time.monotonic() - start
        sizes = {o.task_id: load(Path(tmp) / o.task_id).commits for o in outcomes if o.written}
    bad = [o for o in outcomes if not o.written]
    small = [o.seconds for o in outcomes if sizes.get(o.task_id, 0) <= LARGE_COMMITS]
    large = [o.seconds for o in outcomes if sizes.get(o.task_id, 0) > LARGE_COMMITS]
    print(f"tasks: {len(outcomes)} ({len(bad)} invalid), workers: {args.jobs}")
    print(f"wall: {wall:.1f} s -> {wall / max(1, len(outcomes)):.3f} s per task (wall / tasks)")
    if small:
        print(f"per-task latency (<= {LARGE_COMMITS} commits, n={len(small)}): median {statistics.median(small):.3f} s, "
              f"max {max(small):.3f} s")
    if large:
        print(f"per-task latency (> {LARGE_COMMITS} commits, n={len(large)}): median {statistics.median(large):.3f} s, "
              f"max {max(large):.3f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
