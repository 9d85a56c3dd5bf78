"""Memory the agent writes: the built-in LLM agent (scripted model) writes to the knowledge graph on one
task of a stream, and the next task's graph holds what it wrote, found by a search."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from sdebench.delivery.carried import CarriedMemory, after_episode, replay_calls, written_entries
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load
from sdebench.testing import testmodel

ROOT = Path(__file__).resolve().parents[2]
NOTE = {"entities": [{"name": "invoice rounding lesson", "entityType": "lesson",
                      "observations": ["invoice lines round to the cent, half down"]}]}


def test_written_entries_are_experience_numbered_apart():
    entries = written_entries("t1", [{"tool": "create_entities", "text": "a lesson", "arguments": NOTE},
                                     {"tool": "add_memory", "text": " "}])
    assert [(e.kind, e.origin) for e in entries] == [("W", "t1")]
    (item,) = CarriedMemory(tuple(entries)).items()
    assert (item.id, item.source) == ("X:written#1", "X") and item.text == "a lesson"
    assert replay_calls(CarriedMemory(tuple(entries))) == [("create_entities", NOTE)]


def test_a_system_without_the_write_tool_loads_the_writes_as_items(tmp_path):
    from sdebench.delivery.bm25 import Bm25Memory
    from sdebench.delivery.modes import Memtool

    memory = CarriedMemory(tuple(written_entries("t1", [{"tool": "create_entities", "text": "invoice lines round half down",
                                                         "arguments": NOTE}])))
    prep = Memtool(memory=Bm25Memory()).prepare(load(ROOT / "tasks" / "billing-rounding-v0-K"), tmp_path, memory)
    try:
        assert "X:written#1" in prep.memory.holds() and prep.info["memory_load"]["extra"]["replayed_writes"] == 0
        assert prep.memory.call("memory_search", {"query": "invoice lines round half down"}).items[0] == "X:written#1"
    finally:
        prep.memory.close()


def _cfg(base: str, key_env: str) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "agent=llm", "model=testmodel", f"model.api_base={base}", f"model.api_key_env={key_env}",
            "delivery=memtool", "memory=kg", "memory.write=true", "sandbox=unsafe_local", "max_interventions=0"])
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.memory
def test_what_task_n_wrote_task_n_plus_1_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("SDEBENCH_TEST_KEY", "sk-test")
    first, second = load(ROOT / "tasks" / "billing-rounding-v0-K"), load(ROOT / "tasks" / "billing-rounding-v1-K")
    script = [{"tool": "create_entities", "arguments": NOTE}, {"tool": "submit", "arguments": {}},
              {"tool": "search_nodes", "arguments": {"query": "half down"}}, {"tool": "submit", "arguments": {}}]
    with testmodel.in_thread(testmodel.parse_script(script)) as srv:
        base = testmodel.base_url(srv)
        cfg = _cfg(base, "SDEBENCH_TEST_KEY")
        factory = make_factory(dict(cfg["sandbox"]))
        try:
            rec1 = run_episode(first, cfg, factory, work_root=tmp_path)
            memory = after_episode(CarriedMemory(), first.id, first.statement, rec1, "written")
            rec2 = run_episode(second, cfg, factory, work_root=tmp_path, carried=memory)
        finally:
            factory.cleanup()
        with urllib.request.urlopen(base.removesuffix("/v1") + "/requests", timeout=10) as r:
            requests = json.loads(r.read())
    assert rec1.outcome.error is None and rec2.outcome.error is None, (rec1.outcome.error, rec2.outcome.error)
    assert rec1.delivery.memory_written == [{"tool": "create_entities", "arguments": NOTE,
                                             "text": "invoice rounding lesson\nlesson\ninvoice lines round to the cent, half down"}]
    assert rec2.delivery.carried_items == 1 and rec2.delivery.memory_load["items"] == rec2.delivery.corpus_items
    # the model's request after the search carries its answer: the entity task 1 wrote, replayed into task 2's
    # graph through the graph's own create_entities (its own object, not text)
    answer = json.dumps(requests[3]["body"]["messages"][-1])
    assert '\\"name\\": \\"invoice rounding lesson\\"' in answer and "half down" in answer, answer[:500]
    assert rec2.delivery.memory_load["extra"]["replayed_writes"] == 1
    assert rec2.usage.tool_calls.get("search_nodes") == 1 and rec1.usage.tool_calls.get("create_entities") == 1


@pytest.mark.memory
def test_a_written_call_the_next_system_refuses_is_skipped_not_an_error(tmp_path):
    """The agent authored the carried calls: one that fails on replay cannot turn the next episode into an error."""
    from sdebench.delivery.modes import Memtool
    from sdebench.memory.kg import KnowledgeGraphMemory

    bad = {"relations": [{"from": "nobody", "to": "nothing", "relationType": 7}]}  # refused by the server's schema
    memory = CarriedMemory(tuple(written_entries("t1", [
        {"tool": "create_relations", "text": "nobody nothing", "arguments": bad},
        {"tool": "create_entities", "text": "a lesson", "arguments": NOTE}])))
    prep = Memtool(memory=KnowledgeGraphMemory(write=True, timeout_s=60)).prepare(
        load(ROOT / "tasks" / "billing-rounding-v0-K"), tmp_path, memory)
    try:
        extra = prep.info["memory_load"]["extra"]
        assert (extra["replayed_writes"], extra["replay_failed"]) == (1, 1)
        assert "invoice rounding lesson" in prep.memory.call("search_nodes", {"query": "half down"}).text
    finally:
        prep.memory.close()
