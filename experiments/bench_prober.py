"""Rule 7 per family: fact-space size, the prober's resolve probability under each feedback
policy (exact over the family's draw), and the probe's time per task.

    python experiments/bench_prober.py [--families a,b] [--jobs 2]

The probe runs once per family variant (every placement shares its code and tests), so its time per
task is the variant's probe time divided by the placements (s/var: the variant's probe time, ms/cand:
that per candidate of its space, s/task: per placement). gen/task is the time of building one
placement (`gen.build`, the mean over the placements, built before the probe as generation does;
the validation of rules 1-6 is not included), and cpu/task the CPU seconds of the builds and the
probe (this process and the sandboxed driver) per placement: what a quiet machine gives as wall
time, while the machine is shared. Families that declare no fact space are listed as
unchecked.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sdebench.generation.generate import discover, load_generator, probe_variant
from sdebench.generation.probe import LIMIT, POLICIES
from sdebench.tasks.artifacts import SOURCES

SANDBOX = {"backend": "unsafe_local"}


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(path: Path, variant: int):
    """The variant's probe result, the mean build time of one placement, and the CPU seconds of both."""
    cpu = _cpu()
    gen = load_generator(path)
    start = time.monotonic()
    for source in SOURCES:  # first, as generation does: what the builds cache (filler) serves the probe
        gen.build(variant, source)
    build = (time.monotonic() - start) / len(SOURCES)
    return probe_variant(path, variant, SANDBOX), build, _cpu() - cpu


def main() -> int:
    """Probe every selected family variant and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", help="comma-separated families (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--generators", type=Path, default=Path("generators"))
    args = ap.parse_args()
    found, errors = discover(args.generators)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    wanted = set(args.families.split(",")) if args.families else set(found)
    jobs = [(path, v) for fam, path in sorted(found.items()) if fam in wanted for v in load_generator(path).variants]
    start = time.monotonic()
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(measure, [p for p, _ in jobs], [v for _, v in jobs]))
    header = f"{'family':<20} {'v':>2} {'space':>6} {'distinct':>8} " + " ".join(f"{p:>8}" for p in POLICIES)
    print(header + f" {'s/var':>6} {'ms/cand':>7} {'s/task':>7} {'gen/task':>8} {'cpu/task':>8}  verdict")
    unchecked = []
    for (path, v), (r, build, cpu) in zip(jobs, results, strict=True):
        fam = load_generator(path).family
        if r is None:
            unchecked.append(fam)
            continue
        figs = " ".join(f"{r.resolve.get(p, float('nan')):>8.2%}" for p in POLICIES)
        verdict = "ok" if not r.violations() else "FAIL: " + "; ".join(r.violations())[:160]
        print(f"{fam:<20} {v:>2} {r.size:>6} {r.classes:>8} {figs} {r.seconds:>6.1f} "
              f"{r.seconds / max(1, r.size) * 1e3:>7.1f} {r.seconds / len(SOURCES):>7.2f} {build:>8.2f} "
              f"{cpu / len(SOURCES):>8.2f}  {verdict}")
    if unchecked:
        print(f"unchecked (no fact space declared): {', '.join(sorted(set(unchecked)))}")
    print(f"limit: binary <= {LIMIT:.0%} within the cap; {len(jobs)} variants probed in "
          f"{time.monotonic() - start:.1f} s with {args.jobs} workers, load average "
          f"{os.getloadavg()[0]:.1f} (machine shared: times are noisy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
