"""`searcher`: a memory system's retrieval measured without a model, on real tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdebench.agents.searcher import Searcher, items_of
from sdebench.agents.trajectory import read
from sdebench.delivery.memory import Hit, MemoryItem, format_hits
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load

ROOT = Path(__file__).resolve().parents[2]


def cfg(memory: str, delivery: str = "memtool") -> dict:
    return {"agent": {"name": "searcher", "generators": None}, "model": {"name": "none"}, "delivery": {"name": delivery},
            "memory": {"name": memory}, "seed": 0, "max_interventions": 5,
            "limits": {"max_turns": 500, "max_cost_usd": 2.0, "max_wall_s": 600}}


def episode(task_id: str, memory: str, tmp_path: Path, delivery: str = "memtool"):
    traj = tmp_path / f"{memory}.jsonl"
    rec = run_episode(load(ROOT / "tasks" / task_id), cfg(memory, delivery), make_factory({"backend": "unsafe_local"}),
                      trajectory_path=traj)
    return rec, [e for e in read(traj) if e["kind"] == "agent_note"]


def test_answers_of_every_shape_become_items():
    a, b = MemoryItem("K:a.md", "K", "a", "rounds half down"), MemoryItem("H:1", "H", "fix", "ttl 417")
    assert [i.id for i in items_of(format_hits([Hit(a, 2.0), Hit(b, 1.0)]))] == ["K:a.md", "H:1"]
    graph = {"entities": [{"name": "K:a.md", "entityType": "document", "observations": ["a", "rounds half down"]}],
             "relations": []}
    (g,) = items_of(json.dumps(graph))
    assert g.id == "K:a.md" and "rounds half down" in g.text
    memories = {"results": [{"id": "m1", "memory": "Invoices round half down", "metadata": {"item_id": "K:a.md"}}]}
    assert [i.text for i in items_of(json.dumps(memories))] == ["Invoices round half down"]
    assert [i.text for i in items_of("plain words")] == ["plain words"] and items_of("  ") == []
    assert items_of("No memory items match the query.") == items_of("No results found for query 'x'") == []


def test_it_takes_no_answer_key():
    assert not Searcher.capabilities.needs_answer_key and Searcher.name == "searcher"


def test_with_bm25_it_reads_the_statements_search_like_reader_top1(tmp_path):
    rec, notes = episode("ttlcache-v0-F", "bm25", tmp_path)
    assert rec.outcome.error is None and rec.identity.memory == "bm25"
    assert notes[0]["searcher_tool"] == "memory_search" and notes[0]["found"] == 5
    r = rec.retrieval
    assert [s.tool for s in r.searches] == ["memory_search"] and r.searches[0].k == 5
    # the same pick as reader-top1 under memtool (tests/agents/test_readers.py): resolved at once
    assert rec.outcome.resolved and rec.outcome.interventions == 0 and r.retrieved


def test_without_a_memory_system_it_reads_like_reader_top1(tmp_path):
    rec, notes = episode("ttlcache-v0-F", "bm25", tmp_path, delivery="full")
    assert rec.outcome.error is None and rec.identity.memory is None and "searcher_tool" not in notes[0]


@pytest.mark.memory
def test_with_the_knowledge_graph_it_searches_its_own_tool(tmp_path):
    rec, notes = episode("billing-rounding-v0-K", "kg", tmp_path)
    assert rec.outcome.error is None and rec.identity.memory == "kg"
    load = rec.delivery.memory_load
    assert load["backend"] == "kg" and load["items"] == load["stored"] == rec.delivery.corpus_items
    r = rec.retrieval
    assert r.searchable and {s.tool for s in r.searches} == {"search_nodes"}
    assert r.searches[0].hits == 0 and len(r.searches) > 1  # the whole statement finds nothing; then per term
    assert r.retrieved == (r.best_rank is not None or bool(r.touched))
    assert notes[0]["searcher_tool"] == "search_nodes"


@pytest.mark.memory
def test_a_memory_system_that_cannot_load_is_an_episode_error(tmp_path, monkeypatch):
    import shutil

    bin_dir = tmp_path / "bin"  # git and python, but no node: the knowledge graph cannot start
    bin_dir.mkdir()
    for tool in ("git", "python3"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    rec, _ = episode("billing-rounding-v0-K", "kg", tmp_path)
    assert rec.outcome.stop_reason == "error" and "needs Node.js" in rec.outcome.error
