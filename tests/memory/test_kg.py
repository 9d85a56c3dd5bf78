"""The knowledge-graph memory: the real reference MCP memory server from npm, loaded with a task's corpus."""

from __future__ import annotations

import json

import pytest

from sdebench.delivery.backend import READ, SEARCH, WRITE, MemoryCallError, MemoryLoadError
from sdebench.memory.kg import KnowledgeGraphMemory, entity_of, shown_names
from tests.memory.corpus import corpus


def test_an_item_becomes_one_entity_named_by_its_id(tasks_dir, tmp_path):
    _, items, decisive = corpus(tasks_dir, tmp_path / "repo")
    item = next(i for i in items if i.id == decisive)
    e = entity_of(item)
    assert e["name"] == decisive and e["entityType"] == "document" and e["observations"][0] == item.title
    assert "\n\n".join(e["observations"][1:]).split() == item.text.split()
    assert shown_names('{"entities": [{"name": "K:a"}, {"nam": 1}], "relations": []}') == ["K:a"]
    assert shown_names("not json") == [] and shown_names("[1, 2]") == []


def test_a_missing_install_is_a_load_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MemoryLoadError, match="needs Node.js"):
        KnowledgeGraphMemory().load([], tmp_path / "state")


@pytest.mark.memory
def test_loaded_searched_read_and_closed(tasks_dir, tmp_path):
    task, items, decisive = corpus(tasks_dir, tmp_path / "repo")
    kg = KnowledgeGraphMemory(timeout_s=60)
    report = kg.load(items, tmp_path / "state")
    try:
        assert report.items == report.stored == len(items) and report.version and report.seconds > 0
        assert kg.holds() == {i.id for i in items}
        assert {t.name: t.kind for t in kg.tools()} == {"search_nodes": SEARCH, "open_nodes": READ, "read_graph": READ}
        search = next(t for t in kg.tools() if t.name == "search_nodes")
        assert search.description == "Search for nodes in the knowledge graph based on a query"  # its own words
        doc = next(i for i in items if i.id == decisive)
        phrase = next(line for line in doc.text.splitlines() if len(line.split()) >= 4).strip()[:30]
        found = kg.call("search_nodes", {"query": phrase})
        assert not found.error and decisive in found.items
        assert kg.call("search_nodes", {"query": task.statement}).items == ()  # one substring: a whole statement finds nothing
        opened = kg.call("open_nodes", {"names": [decisive]})
        assert opened.items == (decisive,) and json.loads(opened.text)["entities"][0]["observations"][0] == doc.title
        with pytest.raises(MemoryCallError):
            kg.call("create_entities", {"entities": []})  # no write tools unless asked
        assert (tmp_path / "state" / "memory.jsonl").is_file()
    finally:
        kg.close()
    kg.close()


@pytest.mark.memory
def test_write_tools_when_asked(tasks_dir, tmp_path):
    _, items, _ = corpus(tasks_dir, tmp_path / "repo")
    kg = KnowledgeGraphMemory(write=True, timeout_s=60)
    kg.load(items[:3], tmp_path / "state")
    try:
        assert {t.name for t in kg.tools() if t.kind == WRITE} == {"create_entities", "create_relations", "add_observations"}
        made = kg.call("create_entities", {"entities": [{"name": "rounding rule", "entityType": "lesson",
                                                         "observations": ["invoices round half down"]}]})
        assert not made.error
        found = kg.call("search_nodes", {"query": "half down"})
        assert "rounding rule" in shown_names(found.text) and found.items == ()  # written by the agent: no corpus item
    finally:
        kg.close()


@pytest.mark.memory
def test_a_system_that_dies_mid_episode_is_an_error_result_and_counted(tasks_dir, tmp_path):
    """The agent's calls reach the system: its failure is the agent's error result, never the episode's error."""
    from sdebench.agents.tools import Toolbox

    _, items, _ = corpus(tasks_dir, tmp_path / "repo")
    kg = KnowledgeGraphMemory(timeout_s=20)
    kg.load(items, tmp_path / "state")
    try:
        box = Toolbox(None, ("search_nodes",), kg)
        assert not box.call("search_nodes", {"query": "rounding"}).error
        kg._server.close()  # the server is gone
        r = box.call("search_nodes", {"query": "rounding"})
        assert r.error and r.output == "Error: the memory system failed (RuntimeError)"
        assert box.memory_failures == ["search_nodes: RuntimeError: the memory server is not running"]
        assert box.call("search_nodes", {}).output == "Error: search_nodes: missing required argument 'query'"
        assert len(box.memory_failures) == 1  # a rejected call is the agent's, not a failure of the system
    finally:
        kg.close()
