"""Rule 8 per family: each naive memory reader's pick and whether it resolves, per placement and
delivery, over the emitted tasks (docs/hard.md).

    python experiments/bench_readers.py [--families a,b] [--variants 0] [--tasks-dir tasks] [--jobs 2] [--picks]

For every family variant the probe runs its candidates once (as generation does: it gives the
candidates that resolve under the variant's fact), then every placement's repo is read from its
bundle into the dated memory corpus, and the readers' picks in each delivery's view (full, memtool,
inject, oracle) are judged as rule 8 judges them. Printed: per family, how many placements with
memory (H, K, F, X) each reader resolves in each view (`--picks`: every pick); then the totals per
tier and per bottleneck. On the recall tier this is the calibration; on the hard tier rule 8 wants
0 everywhere but oracle.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sdebench.delivery.memory import dated_corpus
from sdebench.generation.generate import discover, load_generator, probe_variant
from sdebench.generation.readers import READERS, VIEWS, Readers, candidates, judge
from sdebench.tasks import repo
from sdebench.tasks.record import load

SANDBOX = {"backend": "unsafe_local"}


def measure(path: Path, variant: int, tasks_dir: Path) -> tuple[str, int, list[tuple], float]:
    """(family, variant, [(task id, source, competency, bottleneck, Judged)], seconds) of one variant."""
    start = time.monotonic()
    gen = load_generator(path)
    probed = probe_variant(path, variant, SANDBOX)
    rows: list[tuple] = []
    if probed is None or probed.readers is None or probed.readers.problem:
        return gen.family, variant, rows, time.monotonic() - start
    space = probed.readers
    readers = Readers(candidates(space.values, space.spellings))
    for d in sorted(tasks_dir.glob(f"{gen.family}-v{variant}-*")):
        task = load(d)
        with tempfile.TemporaryDirectory() as tmp:
            items, dates = dated_corpus(repo.unbundle(task.bundle, Path(tmp) / "repo"))
        for j in judge(space, items, dates, task.statement, task.fact, readers):
            rows.append((task.id, task.source, task.competency, task.bottleneck, j))
    return gen.family, variant, rows, time.monotonic() - start


def cell(js: list) -> str:
    """resolved/total of a list of Judged."""
    return f"{sum(j.resolves for j in js)}/{len(js)}" if js else "-"


def main() -> int:
    """Judge the readers over every selected family variant and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", help="comma-separated families (default: all)")
    ap.add_argument("--variants", help="comma-separated variants (default: all)")
    ap.add_argument("--tasks-dir", type=Path, default=Path("tasks"))
    ap.add_argument("--generators", type=Path, default=Path("generators"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--picks", action="store_true", help="print every pick")
    args = ap.parse_args()
    found, errors = discover(args.generators)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    wanted = set(args.families.split(",")) if args.families else set(found)
    variants = {int(v) for v in args.variants.split(",")} if args.variants else None
    jobs = [(path, v) for fam, path in sorted(found.items()) if fam in wanted
            for v in load_generator(path).variants if variants is None or v in variants]
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        done = list(pool.map(measure, *zip(*jobs, strict=True), [args.tasks_dir] * len(jobs)))
    memory = [(fam, v, r) for fam, v, rows, _ in done for r in rows if r[1] in ("H", "K", "F", "X")]
    head = " | ".join(f"{r[7:]} {v}" for r in READERS for v in VIEWS)
    print(f"| family | competency | {head} |\n|---|---|" + "---|" * (len(READERS) * len(VIEWS)))
    by_family: dict[str, list] = defaultdict(list)
    for fam, _, r in memory:
        by_family[fam].append(r)
    for fam, rows in sorted(by_family.items()):
        comps = ",".join(sorted({r[2] for r in rows}))
        cells = [cell([r[4] for r in rows if r[4].reader == rd and r[4].view == v]) for rd in READERS for v in VIEWS]
        print(f"| {fam} | {comps} | " + " | ".join(cells) + " |")
    for label, key in (("tier", lambda r: "recall" if r[2] == "recall" else "hard"), ("bottleneck", lambda r: r[3])):
        groups: dict[str, list] = defaultdict(list)
        for _, _, r in memory:
            groups[key(r)].append(r[4])
        print(f"\nby {label} (placements with memory):")
        for g, js in sorted(groups.items()):
            parts = [f"{rd[7:]}: " + ", ".join(f"{v} {cell([j for j in js if j.reader == rd and j.view == v])}"
                                               for v in VIEWS) for rd in READERS]
            print(f"  {g}: " + "; ".join(parts))
    if args.picks:
        print("\npicks (task, reader, view, pick, resolves):")
        for _, _, r in memory:
            print(f"  {r[0]} {r[4].reader} {r[4].view} {r[4].pick} {r[4].resolves}")
    secs = sum(s for *_, s in done)
    print(f"\n{len(jobs)} variants, {len({r[0] for _, _, r in memory})} placements with memory; "
          f"{secs:.0f} s of probe and reading in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
