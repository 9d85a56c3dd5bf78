"""Memory systems as a sweep axis, end to end through `sdebench run`: records, keys and tables per system."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdebench.runs import results
from sdebench.testing import testmodel

pytestmark = pytest.mark.memory
ROOT = Path(__file__).resolve().parents[2]
PRICES = "{input: 3.0, output: 15.0}"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    flags = [a for a in args if a == "-m"]  # Hydra takes its flags before the overrides
    args = tuple(a for a in args if a != "-m")
    return subprocess.run([sys.executable, "-m", "sdebench.run", *flags, f"tasks_dir={ROOT / 'tasks'}", "sandbox=unsafe_local",
                           f"results_dir={tmp_path / 'results'}", f"hydra.run.dir={tmp_path / 'out'}",
                           f"hydra.sweep.dir={tmp_path / 'sweep'}", "progress=false", "agent=searcher",
                           "select.family=billing-rounding", "select.variant=0", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_every_memory_system_side_by_side(tmp_path):
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        mem0 = ["memory.infer=false", f"memory.base_url={testmodel.base_url(srv)}", "memory.model=testmodel",
                "memory.embedding_model=test-embedder", f"memory.prices={PRICES}", f"memory.embedding_prices={PRICES}"]
        r = run(tmp_path, "-m", "memory=bm25,kg,basic-memory", "delivery=memtool,full", "source=K")
        assert r.returncode == 0, r.stderr[-2000:]
        r = run(tmp_path, "memory=mem0", "delivery=memtool", "source=K", *mem0)
        assert r.returncode == 0, r.stderr[-2000:]
    recs = results.read_records(tmp_path / "results")
    by = {(x.identity.delivery, x.identity.memory): x for x in recs}
    # full serves no memory system: one episode for both jobs of the sweep (the second reused it)
    assert sorted(by, key=str) == sorted([("full", None), ("memtool", "bm25"), ("memtool", "kg"), ("memtool", "basic-memory"),
                                          ("memtool", "mem0")], key=str)
    assert len(recs) == 5 and len({x.storage.key for x in recs}) == 5
    for system in ("bm25", "kg", "basic-memory", "mem0"):
        rec = by[("memtool", system)]
        assert rec.outcome.error is None, rec.outcome.error
        load = rec.delivery.memory_load
        assert load["backend"] == system and load["items"] == rec.delivery.corpus_items and load["stored"] >= 1
        assert rec.retrieval.searchable and rec.retrieval.searches
    assert {s.tool for s in by[("memtool", "kg")].retrieval.searches} == {"search_nodes"}
    assert {s.tool for s in by[("memtool", "mem0")].retrieval.searches} == {"search_memories"}
    assert by[("memtool", "mem0")].delivery.memory_load["cost_usd"] > 0  # its embeddings, priced as memory cost
    assert by[("memtool", "mem0")].usage.cost_usd == 0  # ... apart from the agent's (none: the searcher has no model)
    table = subprocess.run([sys.executable, "-m", "sdebench.results", str(tmp_path / "results")], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300).stdout
    assert "| K | memtool/kg |" in table and "| K | memtool/mem0 |" in table and "| K | memtool |" in table
    hashes = {x.identity.memory: json.loads(Path(results.record_path(tmp_path / "results", x.identity, x.storage.key))
                                            .read_text())["storage"]["config_hash"] for x in recs}
    assert len(set(hashes.values())) == 5  # the system is part of the config where the delivery serves one
    # the analysis compares each system with BM25 on the same tasks, like two deliveries
    from sdebench.analysis import tables as analysis

    pairs = analysis.paired_comparisons(results.load(tmp_path / "results"))
    compared = set(pairs["comparison"])
    assert {"memtool - memtool/kg", "memtool - memtool/mem0"} <= compared or \
        {"memtool/kg - memtool", "memtool/mem0 - memtool"} <= compared, compared
    systems = analysis.memory_systems(results.load(tmp_path / "results"))
    assert set(systems["memory"]) == {"bm25", "kg", "basic-memory", "mem0"} and (systems["episodes"] == 1).all()
    assert float(systems.set_index("memory").loc["mem0", "memory $"]) > 0
    from sdebench.analysis import findings, report

    index = report.build([tmp_path / "results"], tmp_path / "report")
    assert "Memory systems behind memtool" in index.read_text()
    assert "## Memory systems behind memtool" in "\n".join(findings.memory_section(analysis.prepare(results.load(tmp_path / "results"))))
