"""Memory systems on a task's memory corpus: how long loading takes and how fast a search answers.

    PYTHONPATH=$PWD python experiments/bench_memory.py [--task tasks/billing-rounding-v0-K] [--task DIR ...]
                                                       [--systems bm25,kg,basic-memory,mem0] [--queries 40]

For each task dir and each system it loads the task's corpus (one item per commit, doc and note
entry: sdebench.delivery.memory.corpus_from_repo) into a fresh state dir, as an episode does, and
prints the load time (starting the system included), the items it holds, and the latency of the
system's search tool over `--queries` queries (the task statement, then item titles): median and
90th percentile, plus the rank of the decisive item for the statement. mem0 runs without its LLM
extraction here (memory.infer=false: one embedding call per item) against the project's scripted
test model on loopback, so its figures are mem0's and sdebench's own time, not a model's; with
extraction each item adds one model call (experiments/bench_memory_mem0.py measures that).
The large-scale corpus (about 2,700 items) comes from
`python -m sdebench.generate --scale large --families ttlcache --variants 0 --sources K --out DIR`.
Systems are installed on first use (python -m sdebench.memory.install).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

from sdebench.components import build_memory
from sdebench.delivery.backend import SEARCH
from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import corpus_from_repo, estimate_tokens
from sdebench.tasks import record, repo
from sdebench.testing import testmodel

ROOT = Path(__file__).resolve().parents[1]
PRICES = {"input": 0.02, "output": 0.0}  # made up: the test model's embeddings, priced for the report only


def options(system: str, model_url: str | None) -> dict:
    """The memory section of one system, as `memory=<system>` would give it."""
    if system == "mem0":
        return {"name": "mem0", "infer": False, "base_url": model_url, "model": "testmodel",
                "embedding_model": "test-embedder", "prices": PRICES, "embedding_prices": PRICES, "timeout_s": 600}
    return {"name": system} if system == "bm25" else {"name": system, "timeout_s": 600}


def measure(system: str, task_dir: Path, n_queries: int, model_url: str | None) -> dict:
    """Load one task's corpus into `system` and time its search tool."""
    task = record.load(task_dir)
    with tempfile.TemporaryDirectory() as tmp:
        items = corpus_from_repo(repo.unbundle(task.bundle, Path(tmp) / "repo"))
        decisive = {d.id for d in decisive_items(task)}
        memory = build_memory(options(system, model_url))
        t0 = time.monotonic()
        report = memory.load(items, Path(tmp) / "state")
        load_s = time.monotonic() - t0
        try:
            tool = next(t for t in memory.tools() if t.kind == SEARCH)
            queries = [task.statement, *[i.title for i in items if i.title]][:n_queries]
            lat, rank = [], None
            for n, q in enumerate(queries):
                t = time.monotonic()
                answer = memory.call(tool.name, {tool.query_arg: q})
                lat.append(time.monotonic() - t)
                if n == 0:
                    rank = next((k for k, i in enumerate(answer.items, 1) if i in decisive), None)
        finally:
            memory.close()
    lat.sort()
    return {"system": system, "task": task.id, "items": len(items), "tokens": sum(estimate_tokens(i.text) for i in items),
            "stored": report.stored, "load_s": load_s, "median_ms": statistics.median(lat) * 1000,
            "p90_ms": lat[int(0.9 * (len(lat) - 1))] * 1000, "queries": len(lat), "rank": rank}


def main() -> None:
    """Measure every system on every task and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", type=Path, help="a task dir (repeatable; default: billing-rounding-v0-K)")
    ap.add_argument("--systems", default="bm25,kg,basic-memory,mem0")
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    tasks = args.task or [ROOT / "tasks" / "billing-rounding-v0-K"]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    print("| system | task | items | tokens | stored | load s | search median ms | search p90 ms | queries | statement rank |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with contextlib.ExitStack() as stack:
        url = None
        if "mem0" in systems:
            srv = stack.enter_context(testmodel.in_thread(testmodel.parse_script([])))
            url = testmodel.base_url(srv)
        for task_dir in tasks:
            for system in systems:
                r = measure(system, task_dir, args.queries, url)
                print(f"| {r['system']} | {r['task']} | {r['items']} | {r['tokens']} | {r['stored']} | {r['load_s']:.2f} | "
                      f"{r['median_ms']:.2f} | {r['p90_ms']:.2f} | {r['queries']} | {r['rank'] or '-'} |", flush=True)


if __name__ == "__main__":
    main()
