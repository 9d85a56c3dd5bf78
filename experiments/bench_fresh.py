"""Seconds per task of a fresh private set against the published set, same jobs (docs/fresh.md).

    python experiments/bench_fresh.py [--families ttlcache,inventory-reorder] [--variants 0] [--jobs 2]

Generates both into temporary dirs (tasks/ is untouched) with a throwaway seed, rule 7 included, and
prints wall time per task for each, the key derivation time and the rule-7 probe time per variant.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sdebench.generation import generate
from sdebench.generation.fresh import derive, new_seed
from sdebench.tasks.record import load
from sdebench.tasks.selection import comma_list


def run(jobs, fresh, workers: int) -> tuple[float, list, list[str]]:
    """(wall seconds, outcomes, facts) of one generation into a temporary dir."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        outcomes = generate.generate(jobs, Path(tmp), {"backend": "unsafe_local"}, workers, progress=False, fresh=fresh)
        wall = time.monotonic() - start
        facts = sorted({load(Path(tmp) / o.task_id).fact for o in outcomes if o.written})
    return wall, outcomes, facts


def main() -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="ttlcache,inventory-reorder")
    ap.add_argument("--variants", default="0")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--generators", type=Path, default=Path("generators"))
    args = ap.parse_args()
    variants = {int(v) for v in comma_list(args.variants) or ()} or None
    jobs, errors = generate.plan(args.generators, set(comma_list(args.families) or ()) or None, variants, None)
    jobs, skipped = generate.fresh_jobs(jobs)
    for e in errors + skipped:
        print("error:", e, file=sys.stderr)
    start = time.monotonic()
    key = derive(new_seed())
    print(f"key derivation (scrypt): {time.monotonic() - start:.2f} s")
    bad = 0
    for label, fresh in (("published", None), ("fresh", key)):
        wall, outcomes, facts = run(jobs, fresh, args.jobs)
        bad += sum(not o.written for o in outcomes)
        per = [o.seconds for o in outcomes]
        print(f"{label}: {len(outcomes)} tasks ({sum(not o.written for o in outcomes)} invalid), wall {wall:.1f} s -> "
              f"{wall / max(1, len(outcomes)):.2f} s per task; build+validate per task median "
              f"{statistics.median(per):.2f} s, max {max(per):.2f} s (rule 7 probes run before, per variant)")
        print(f"  facts: {'; '.join(facts)}")
    return 1 if bad or skipped else 0


if __name__ == "__main__":
    sys.exit(main())
