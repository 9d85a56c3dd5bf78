"""mem0 as a memory backend on a real task's memory corpus: load time and search latency, with and without
mem0's LLM extraction, against the scripted test model (its embeddings, and one scripted extraction reply
per item), so the figures are mem0's and sdebench's own time, not a model's.

    PYTHONPATH=$PWD python experiments/bench_memory_mem0.py [--task tasks/billing-rounding-v0-K]
                                                            [--searches 3] [--model-delay 0]

After one unmeasured start (this process's first imports), for each mode (infer=false: each item
stored as it is, one embedding call; infer=true: mem0's extraction, one LLM call and two embedding
calls an item) it prints the start-up (mem0's process and its two metering gateways, before the first
item: the load report's `startup_s`), the load of the corpus (start-up included) and its time per item
after the start-up, the model calls the load made, and the latency of `search_memories` over the
queries (each item's title, the task's statement and the decisive item's fact line, each asked
`--searches` times): median, 90th percentile and maximum, and the rank of the decisive item for the
statement and for its fact line. `--model-delay S` makes the test model answer every extraction after
S seconds (a real model's latency, to see the load it implies).
mem0 is installed on first use (python -m sdebench.memory.install mem0).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import MemoryItem, corpus_from_repo
from sdebench.memory.mem0 import Mem0Memory
from sdebench.tasks import record, repo
from sdebench.tasks.tokens import normalise
from sdebench.testing import testmodel

PRICES = {"input": 3.0, "output": 15.0}  # made up: the test model's calls are priced for the report only
EMBEDDING_PRICES = {"input": 0.02, "output": 0.0}


def extraction(item: MemoryItem, fact: str | None) -> str:
    """The scripted extraction reply for one item: its longer lines (at most three), and the fact line."""
    lines = [ln.strip("-#* ").strip() for ln in item.text.splitlines()]
    out = [ln for ln in lines if len(ln) >= 40][:3]
    if fact and fact not in out:
        out.append(fact)
    return json.dumps({"memory": [{"id": str(n), "text": t} for n, t in enumerate(out)]})


def rank(item_ids: tuple[str, ...], wanted: str) -> int | None:
    """The 1-based rank of `wanted` among an answer's items, or None."""
    return item_ids.index(wanted) + 1 if wanted in item_ids else None


def warm_up() -> None:
    """Start and stop mem0 once, unmeasured: this process's first gateway imports litellm and uvicorn."""
    with testmodel.in_thread(testmodel.parse_script([])) as srv, tempfile.TemporaryDirectory() as tmp:
        m = Mem0Memory(
            base_url=testmodel.base_url(srv),
            model="testmodel",
            prices=PRICES,
            embedding_prices=EMBEDDING_PRICES,
        )
        try:
            m.load([], Path(tmp))
        finally:
            m.close()


def run(
    infer: bool,
    items: list[MemoryItem],
    decisive: str,
    fact: str,
    queries: list[str],
    args: argparse.Namespace,
) -> None:
    """Start-up, load and searches of one mode, printed."""
    steps = [
        {
            "text": extraction(i, fact if i.id == decisive else None),
            "usage": {"prompt_tokens": 400, "completion_tokens": 40},
        }
        for i in items
    ]
    script = testmodel.parse_script({"steps": steps, "delay_s": args.model_delay})
    with testmodel.in_thread(script) as srv, tempfile.TemporaryDirectory() as tmp:
        opts = {
            "infer": infer,
            "base_url": testmodel.base_url(srv),
            "model": "testmodel",
            "embedding_model": "test-embedder",
            "prices": PRICES,
            "embedding_prices": EMBEDDING_PRICES,
            "timeout_s": 600,
        }
        m = Mem0Memory(**opts)
        try:
            report = m.load(items, Path(tmp) / "state")
            times = []
            for _ in range(args.searches):
                for q in queries:
                    t0 = time.perf_counter()
                    m.call("search_memories", {"query": q})
                    times.append(time.perf_counter() - t0)
            by_statement = rank(
                m.call("search_memories", {"query": queries[-2], "limit": 20}).items, decisive
            )
            by_fact = rank(m.call("search_memories", {"query": fact, "limit": 20}).items, decisive)
        finally:
            m.close()
    times.sort()
    ms = [1000 * t for t in times]
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    startup = report.extra["startup_s"]
    per_item = (report.seconds - startup) / max(1, len(items))
    print(
        f"infer={str(infer).lower():5}  start-up {startup:5.2f} s   load {report.seconds:6.2f} s "
        f"({len(items)} items, {report.stored} memories; {1000 * per_item:6.1f} ms an item after start-up)   "
        f"model calls: {report.llm_calls} LLM, {report.extra['embedding_calls']} embedding, {report.tokens} tokens, "
        f"${report.cost_usd:.6f}"
    )
    print(
        f"             search_memories: median {statistics.median(ms):6.1f} ms  p90 {p90:6.1f} ms  max {ms[-1]:6.1f} ms "
        f"({len(ms)} searches)   decisive item's rank: statement {by_statement}, fact line {by_fact}"
    )


def main() -> int:
    """Run both modes on the task."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--task",
        type=Path,
        default=Path("tasks/billing-rounding-v0-K"),
        help="a task dir with a decisive item",
    )
    ap.add_argument("--searches", type=int, default=3, help="rounds of the search queries")
    ap.add_argument(
        "--model-delay", type=float, default=0.0, metavar="S", help="the test model's reply delay"
    )
    args = ap.parse_args()
    task = record.load(args.task)
    decs = decisive_items(task)
    if not decs:
        ap.error(f"{args.task} has no decisive memory item (a `none` placement?)")
    with tempfile.TemporaryDirectory() as tmp:
        items = corpus_from_repo(repo.unbundle(task.bundle, Path(tmp) / "r"))
    dec = decs[0]
    item = next(i for i in items if i.id == dec.id)
    fact = next(ln for ln in item.text.splitlines() if normalise(ln) in dec.lines).strip("-#* ").strip()
    queries = [i.title for i in items] + [task.statement, fact]
    load1 = os.getloadavg()[0]
    print(
        f"{task.id}: {len(items)} memory items, {sum(len(i.text) for i in items)} chars; decisive {dec.id}; "
        f"load average {load1:.2f}"
    )
    warm_up()
    for infer in (False, True):
        run(infer, items, dec.id, fact, queries, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
