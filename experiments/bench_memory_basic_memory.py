"""basic-memory as a memory backend on a real task's memory corpus: load time and search latency.

    PYTHONPATH=$PWD python experiments/bench_memory_basic_memory.py [--task tasks/billing-rounding-v0-K]
                                                                   [--searches 3]

It loads the task's corpus (one note per item; the load report's time covers writing the notes,
starting `basic-memory mcp` and waiting until its own search counts every note), then times
`search_notes` over the queries (each item's title, at most 60 of them, the task's statement and
the decisive item's fact line, each asked `--searches` times): median, 90th percentile and maximum,
and the rank of the decisive item for the statement and for its fact line, and `read_note` of the
decisive item. For the large scale, generate a task first, e.g.
`python -m sdebench.generate --out /tmp/large-tasks --families billing-rounding --variants 0
--sources K --scale large` (2,746 items), and pass `--task /tmp/large-tasks/billing-rounding-v0-K`.
basic-memory is installed on first use (python -m sdebench.memory.install basic-memory).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import corpus_from_repo
from sdebench.memory.basic_memory import BasicMemory, notes_of
from sdebench.tasks import record, repo

MAX_TITLES = 60


def rank(item_ids: tuple[str, ...], wanted: str) -> int | None:
    """The 1-based rank of `wanted` among an answer's items, or None."""
    return item_ids.index(wanted) + 1 if wanted in item_ids else None


def main() -> None:
    """Load one task's corpus into basic-memory and print the load time and the search latency."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="tasks/billing-rounding-v0-K")
    ap.add_argument("--searches", type=int, default=3, help="times each query is asked")
    args = ap.parse_args()
    task = record.load(Path(args.task))
    with tempfile.TemporaryDirectory() as tmp:
        items = corpus_from_repo(repo.unbundle(task.bundle, Path(tmp) / "repo"))
        decisive = decisive_items(task)[0]
        bm = BasicMemory()
        try:
            report = bm.load(items, Path(tmp) / "state")
            print(
                f"{task.id}: {report.items} items, {report.stored} notes indexed, load {report.seconds:.1f} s "
                f"({1000 * report.seconds / max(1, report.items):.0f} ms an item), basic-memory {report.version}"
            )
            queries = [i.title for i in items[:MAX_TITLES]] + [task.statement, decisive.lines[0]]
            took = []
            for query in queries * args.searches:
                start = time.monotonic()
                bm.call("search_notes", {"query": query})
                took.append(time.monotonic() - start)
            took.sort()
            print(
                f"search_notes: {len(took)} searches, median {1000 * statistics.median(took):.0f} ms, "
                f"p90 {1000 * took[int(0.9 * (len(took) - 1))]:.0f} ms, max {1000 * took[-1]:.0f} ms"
            )
            for label, query in (("statement", task.statement), ("fact line", decisive.lines[0])):
                answer = bm.call("search_notes", {"query": query})
                print(
                    f"decisive {decisive.id} for the {label}: rank {rank(answer.items, decisive.id)} "
                    f"of {len(answer.items)}"
                )
            (note,) = [n for n in notes_of(items) if n.item.id == decisive.id]
            start = time.monotonic()
            answer = bm.call("read_note", {"identifier": note.permalink})
            print(f"read_note of it: {1000 * (time.monotonic() - start):.0f} ms, items {answer.items}")
        finally:
            bm.close()


if __name__ == "__main__":
    main()
