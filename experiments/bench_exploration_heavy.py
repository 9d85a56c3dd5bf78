"""Print per-task generation + validation seconds of exploration-heavy families, per size.

Usage: PYTHONPATH=$PWD python experiments/bench_exploration_heavy.py [family ...]
Builds every (variant, source) task of the named families (default: every exploration-heavy
family) into a temporary dir, one at a time, and prints seconds per task grouped by repo size.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from sdebench.generation.generate import build_task, discover, load_generator
from sdebench.tasks.artifacts import SOURCES


def main(argv: list[str]) -> int:
    """Run the benchmark and print one line per family x variant."""
    found, _ = discover(Path("generators"))
    names = argv or sorted(f for f, p in found.items() if load_generator(p).bottleneck == "exploration-heavy")
    with tempfile.TemporaryDirectory(prefix="sdebench-bench-") as tmp:
        for name in names:
            gen = load_generator(found[name])
            for v in gen.variants:
                secs, bad = [], 0
                for s in SOURCES:
                    out = build_task(found[name], v, s, Path(tmp), {"backend": "unsafe_local"})
                    secs.append(out.seconds)
                    bad += bool(out.violations)
                size = getattr(gen, "SIZES", {}).get(v) or getattr(sys.modules[type(gen).__module__], "SIZES", {}).get(v, "?")
                print(f"{name} v{v} size={size}: mean {statistics.mean(secs):.2f}s max {max(secs):.2f}s "
                      f"per task ({len(secs)} tasks, {bad} invalid)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
