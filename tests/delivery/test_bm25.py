"""The built-in memory system: BM25 behind the one `memory_search` tool, as it always was."""

from __future__ import annotations

import pytest

from sdebench.delivery.backend import SEARCH, MemoryBackend, MemoryCallError
from sdebench.delivery.bm25 import DESCRIPTION, TOOL, Bm25Memory
from sdebench.delivery.memory import MemoryIndex, format_hits
from tests.memory.corpus import corpus


def test_the_same_search_as_the_index_it_wraps(tasks_dir, tmp_path):
    task, items, decisive = corpus(tasks_dir, tmp_path / "repo")
    memory = Bm25Memory(default_k=3)
    report = memory.load(items, tmp_path / "state")
    assert isinstance(memory, MemoryBackend) and report.items == report.stored == len(items)
    assert not (tmp_path / "state").exists()  # nothing on disk
    (tool,) = memory.tools()
    assert (tool.name, tool.description, tool.kind, tool.parameters["required"]) == (TOOL, DESCRIPTION, SEARCH, ["query"])
    answer = memory.call(TOOL, {"query": task.statement})
    hits = MemoryIndex(items).search(task.statement, 3)
    assert answer.text == format_hits(hits) and answer.items == tuple(h.item.id for h in hits) and answer.asked == 3
    assert decisive in memory.holds() and memory.holds() == {i.id for i in items}
    assert len(memory.call(TOOL, {"query": task.statement, "k": "50"}).items) <= 20  # capped, a numeric string taken


@pytest.mark.parametrize("args, message", [({"query": 3}, "'query' must be a string"), ({"query": "x", "k": "many"}, "'k' must be an integer"),
                                           ({"query": "x", "k": True}, "'k' must be an integer")])
def test_bad_arguments_are_the_agents_error(args, message, tasks_dir, tmp_path):
    memory = Bm25Memory.of(corpus(tasks_dir, tmp_path / "repo")[1])
    with pytest.raises(MemoryCallError, match=message):
        memory.call(TOOL, args)
    with pytest.raises(MemoryCallError, match="unknown memory tool"):
        memory.call("search_nodes", {"query": "x"})
    memory.close()
    memory.close()
