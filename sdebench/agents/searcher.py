"""`searcher`: a reference agent that measures a memory system's retrieval on every task, without a model.

Under memtool it calls the memory system's search tool (the first memory tool whose name says
`search` and that takes a `query`) with the task statement; when that returns no item (a system
that matches the query as one substring, like the knowledge graph, finds no whole statement) it
searches once per statement term instead (lower-cased words, stopwords out, longest first, at
most `MAX_TERMS`) and ranks what came back by how many terms found it, then by first appearance.
The answer is read into items whatever the system's format: BM25's rendered hits, a JSON graph's
entities (name plus observations), a JSON list of memories or notes (their text fields), else the
whole text as one item (an answer that says it found nothing, "No results found", is no item). Then it is `reader-top1` (sdebench.generation.readers): the first ranked
item that mentions a candidate of the family gives the pick, rendered through the family's
renderer, and submitted. It never receives an answer key. Outside memtool it reads what
`reader-top1` reads.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sdebench.agents.readers import ReaderAgent
from sdebench.delivery.memory import MemoryItem, parse_rendered, tokenize

MAX_TERMS = 12
_NOTHING = re.compile(r"^no\b[^\n]{0,80}\b(?:found|match|matches|matched)\b", re.I)  # a system saying it found nothing
_TEXT_KEYS = ("memory", "text", "content", "observations", "title", "name", "permalink", "file_path")


def _texts(node: Any) -> list[str]:
    """The text fields of a JSON value, flattened."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [t for v in node for t in _texts(v)]
    if isinstance(node, dict):
        return [t for k in _TEXT_KEYS if k in node for t in _texts(node[k])]
    return []


def _records(node: Any) -> list[dict]:
    """The result records of a JSON answer: a graph's entities, or the objects of its first list."""
    if isinstance(node, list):
        return [r for r in node if isinstance(r, dict)]
    if isinstance(node, dict):
        for key in ("entities", "results", "memories", "notes", "items"):
            if isinstance(node.get(key), list):
                return [r for r in node[key] if isinstance(r, dict)]
    return []


def items_of(text: str) -> list[MemoryItem]:
    """The items a memory tool's answer shows, in its order (see the module doc)."""
    rendered = parse_rendered(text)
    if rendered:
        return rendered
    try:
        data = json.loads(text)
    except ValueError:
        if not text.strip() or _NOTHING.match(text.strip()):
            return []  # "No memory items match the query.", "No results found ..."
        return [MemoryItem("answer", "K", "answer", text)]
    out = []
    for n, rec in enumerate(_records(data)):
        body = "\n".join(_texts(rec))
        if body.strip():
            out.append(MemoryItem(str(rec.get("name") or rec.get("id") or rec.get("permalink") or n), "K", "", body))
    return out


class Searcher(ReaderAgent):
    """Searches the memory system with the statement, applies the best hit (reader-top1), submits."""

    name = "searcher"
    reader = "reader-top1"

    def search_tool(self) -> str | None:
        """The memory system's search tool: the first memory tool named `*search*` that takes a `query`."""
        schemas = {s["function"]["name"]: s["function"] for s in self.ctx.toolbox.schemas()}
        for name in self.ctx.toolbox.memory_names():
            props = (schemas.get(name, {}).get("parameters") or {}).get("properties") or {}
            if "search" in name and "query" in props:
                return name
        return None

    def _search(self, tool: str, query: str) -> list[MemoryItem]:
        res = self._tool(tool, {"query": query})
        return [] if res.error else items_of(res.output)

    def memory(self) -> tuple[list, list, bool]:
        """The ranked items of the memory system's search (see the module doc); outside memtool, reader-top1's."""
        tool = self.search_tool()
        if tool is None:
            return super().memory()
        found = self._search(tool, self.ctx.statement)
        if not found:
            terms = sorted(set(tokenize(self.ctx.statement)), key=lambda t: (-len(t), t))[:MAX_TERMS]
            score: dict[str, int] = {}
            first: dict[str, MemoryItem] = {}
            for term in terms:
                for item in self._search(tool, term):
                    score[item.id] = score.get(item.id, 0) + 1
                    first.setdefault(item.id, item)
            order = sorted(first, key=lambda i: -score[i])  # stable: first appearance breaks ties
            found = [first[i] for i in order]
        self.ctx.trajectory.log("agent_note", searcher_tool=tool, found=len(found))
        return found, [None] * len(found), True
