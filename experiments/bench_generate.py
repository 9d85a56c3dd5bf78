"""Seconds per task for generation plus validation, against memory scale, and what the memory costs.

    python experiments/bench_generate.py [--scale default large ...] [--families a,b] [--variants 0]
                                         [--sources H,K,F,X,none] [--jobs 2] [--probe]

Targets: under 1 s per task at the default scale, under 3 s per task at 2,000 commits (2 cores).
Generates into a temporary dir, so tasks/ is untouched. A task's seconds are its build (twice: rule
6), the checks of rules 1-6 and its three validation runs; rule 7's probe runs once per variant
(over the scaled HEAD) and is left out unless `--probe` (then it is in the wall time, not in the
per-task figures). The scaled filler, and the bytecode of the modules the validation runs import,
are built once per variant and worker, so the first placement of a variant pays for them and the
others share them.

Per scale it also prints the memory corpus (sdebench.delivery.memory: items and tokens, the
chars/4 estimate, over the full repo) and the retrieval diagnostics only a synthetic task can give
(sdebench.delivery.decisive): whether `inject` (conf/delivery/inject.yaml) had to fall back to its
top-k and whether the decisive item made the budget, and the rank at which `memory_search` returns
the decisive item for the task's statement as the query.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sdebench.generation import generate
from sdebench.generation.scale import SCALE_HELP, parse_scale
from sdebench.tasks.record import load
from sdebench.tasks.selection import comma_list

INJECT_BUDGET, INJECT_TOP_K = 8000, 10  # conf/delivery/inject.yaml
RANK_DEPTH = 100


def memory_figures(task_dir: Path) -> dict:
    """Corpus size and the decisive item's fate in inject and memtool for one written task."""
    from sdebench.delivery import decisive
    from sdebench.delivery.memory import MemoryIndex, corpus_from_repo, estimate_tokens, render_inject
    from sdebench.tasks import repo

    task = load(task_dir)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        full = repo.unbundle(task.bundle, Path(tmp) / "r")
        items = corpus_from_repo(full)
        index = MemoryIndex(items)
        corpus_s = time.monotonic() - start
    dec = {d.id for d in decisive.of_items(items, task)}
    inj = render_inject(items, task.statement, INJECT_BUDGET, INJECT_TOP_K, index)
    hits = index.search(task.statement, RANK_DEPTH)
    rank = next((n for n, h in enumerate(hits, 1) if h.item.id in dec), None)
    return {"commits": task.commits, "items": len(items), "tokens": sum(estimate_tokens(i.render()) for i in items),
            "mode": inj.mode, "injected": bool(dec & set(inj.items)) if dec else None, "rank": rank if dec else None,
            "decisive": bool(dec), "corpus_s": corpus_s}


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed_build(*args, **kwargs) -> tuple[generate.TaskOutcome, float]:
    """`generate.build_task(*args)` and the CPU seconds it took (this process and the git and
    pytest processes it waited for): a figure a busy machine inflates much less than wall time."""
    start = _cpu()
    outcome = generate.build_task(*args, **kwargs)
    return outcome, _cpu() - start


def run_scale(label: str, jobs: list, args: argparse.Namespace) -> int:
    """Generate and validate `jobs` at one scale; print its figures; 1 if a task is invalid."""
    scale = parse_scale(label)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        start = time.monotonic()
        cpu: list[float] = []
        if args.probe:
            outcomes = generate.generate(jobs, out, {"backend": "unsafe_local"}, args.jobs, progress=False, scale=scale)
        else:
            with ProcessPoolExecutor(max(1, args.jobs)) as pool:
                futs = [pool.submit(timed_build, p, v, s, out, {"backend": "unsafe_local"}, None, scale=scale)
                        for p, v, s in jobs]
                outcomes, cpu = map(list, zip(*(f.result() for f in futs), strict=True))
        wall = time.monotonic() - start
        figures = [memory_figures(out / o.task_id) for o in outcomes if o.written]
    bad = [o for o in outcomes if not o.written]
    for o in bad:
        print(f"  invalid {o.task_id}: {'; '.join(o.violations)[:300]}", file=sys.stderr)
    secs = [o.seconds for o in outcomes if o.written]
    print(f"scale {scale.label}: {len(outcomes)} tasks ({len(bad)} invalid), workers {args.jobs}, "
          f"wall {wall:.1f} s{' (rule 7 included)' if args.probe else ''}, load average {os.getloadavg()[0]:.1f}")
    if not figures:
        return 1
    med = statistics.median
    print(f"  commits: median {med(f['commits'] for f in figures):.0f}, max {max(f['commits'] for f in figures)}")
    print(f"  generation + validation per task: median {med(secs):.2f} s, max {max(secs):.2f} s "
          f"(wall / tasks {wall / len(outcomes):.2f} s)" + (f"; CPU median {med(cpu):.2f} s" if cpu else ""))
    print(f"  memory corpus: median {med(f['items'] for f in figures):.0f} items, "
          f"{med(f['tokens'] for f in figures):,.0f} tokens (max {max(f['tokens'] for f in figures):,}); "
          f"built and indexed in {med(f['corpus_s'] for f in figures):.2f} s median")
    modes = {m: sum(f["mode"] == m for f in figures) for m in ("all", "top_k", "empty")}
    placed = [f for f in figures if f["decisive"]]
    print(f"  inject (budget {INJECT_BUDGET}, top_k {INJECT_TOP_K}): " + ", ".join(f"{m} {n}" for m, n in modes.items())
          + f"; decisive item made the budget in {sum(bool(f['injected']) for f in placed)}/{len(placed)} placements")
    ranks = [f["rank"] for f in placed]
    found = sorted(r for r in ranks if r is not None)
    print(f"  memtool, statement as the query: decisive item in the top 5 for {sum(r <= 5 for r in found)}/{len(placed)}, "
          f"top {RANK_DEPTH} for {len(found)}/{len(placed)}; ranks {found}")
    return 1 if bad else 0


def main() -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", nargs="+", default=["default"], metavar="SCALE",
                    help="one or more scales, each measured in turn; " + SCALE_HELP)
    ap.add_argument("--families", help="comma-separated families (default: all)")
    ap.add_argument("--variants", help="comma-separated variants (default: all)")
    ap.add_argument("--sources", help="comma-separated sources (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--probe", action="store_true", help="also run rule 7's probe (once per variant)")
    ap.add_argument("--generators", type=Path, default=Path("generators"))
    args = ap.parse_args()
    families = set(comma_list(args.families) or ()) or None
    variants = {int(v) for v in comma_list(args.variants) or ()} or None
    sources = set(comma_list(args.sources) or ()) or None
    jobs, errors = generate.plan(args.generators, families, variants, sources)
    for e in errors:
        print("error:", e, file=sys.stderr)
    if not jobs:
        return 1
    code = 0
    for label in args.scale:
        try:
            parse_scale(label)
        except ValueError as e:
            ap.error(str(e))
    for label in args.scale:
        code |= run_scale(label, jobs, args)
    return code


if __name__ == "__main__":
    sys.exit(main())
