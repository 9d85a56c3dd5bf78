"""What each naive reader picks on the hard-tier families, per placement and delivery view.

For every hard family variant (or the ones named) and every placement, builds the task's repo from
its spec, reads its dated memory corpus and prints each reader's pick (sdebench.generation.readers)
over the full, memtool and inject views, next to the fact and the competency. A pick equal to the
fact is marked `FACT` (rule 8 forbids it outside the oracle view; `python -m sdebench.generate`
judges it by real test runs, this script by value). No tests run: seconds per family.

    python experiments/hard_picks.py                          # every hard family in generators/
    python experiments/hard_picks.py --families card-fees --scale large
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sdebench.delivery.memory import dated_corpus  # noqa: E402
from sdebench.generation.generate import discover, load_generator  # noqa: E402
from sdebench.generation.readers import READERS, Readers, candidates, delivery_views, picks  # noqa: E402
from sdebench.generation.scale import enlarge, parse_scale  # noqa: E402
from sdebench.tasks import repo  # noqa: E402
from sdebench.tasks.artifacts import RECALL, SOURCES  # noqa: E402

VIEWS = ("full", "memtool", "inject")
SHORT = {"reader-top1": "top1", "reader-latest": "latest", "reader-majority": "majority"}


def hard_families(generators: Path, names: list[str] | None) -> list:
    """The generators whose variants are not all recall (the hard tier), optionally only `names`."""
    found, _ = discover(generators)
    gens = [load_generator(p) for name, p in sorted(found.items()) if not names or name in names]
    return [g for g in gens if any(g.build(v, "none").competency != RECALL for v in g.variants)]


def main(argv: list[str] | None = None) -> int:
    """Print the picks table; exit 1 if a reader picks the fact outside the oracle view."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generators", type=Path, default=ROOT / "generators")
    ap.add_argument("--families", default="", help="comma-separated families (default: every hard family)")
    ap.add_argument("--scale", default="default", help="memory scale (sdebench.generation.scale)")
    args = ap.parse_args(argv)
    scale = parse_scale(args.scale)
    names = [n for n in args.families.split(",") if n] or None
    bad = 0
    print("| family | v | competency | fact | placement | " + " | ".join(
        f"{SHORT[r]} ({v})" for v in VIEWS for r in READERS) + " |")
    print("|---" * (5 + len(VIEWS) * len(READERS)) + "|")
    for gen in hard_families(args.generators, names):
        space = gen.space
        for v in gen.variants:
            fact = gen.fact(v)
            readers = Readers(candidates(space.values(), [gen.spellings(v, c) for c in space.values()]))
            for source in SOURCES:
                spec = enlarge(gen.build(v, source), scale, gen)
                with tempfile.TemporaryDirectory() as tmp:
                    repo.build(Path(tmp) / "r", spec.commits)
                    items, dates = dated_corpus(Path(tmp) / "r")
                views = delivery_views(items, dates, spec.statement, spec.fact)
                got = picks(readers, {k: views[k] for k in VIEWS}, spec.statement)
                cells = []
                for view in VIEWS:
                    for r in READERS:
                        c = got[(r, view)]
                        hit = c is not None and c.value == fact
                        bad += hit
                        cells.append("-" if c is None else (f"FACT {c.value}" if hit else str(c.value)))
                print(f"| {gen.family} | {v} | {spec.competency} | {fact} | {source} | " + " | ".join(cells) + " |")
    print(f"\n{bad} pick(s) of the fact outside the oracle view", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
