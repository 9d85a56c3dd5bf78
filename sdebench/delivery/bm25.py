"""The built-in memory system: BM25 (bm25s) over the memory items, one `memory_search` tool.

This is the memory tool as it always was: the same index, the same description, the same output
for the same query, so results with `memory=bm25` (the default) are unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdebench.delivery.backend import SEARCH, Answer, LoadReport, MemoryCallError, MemoryTool
from sdebench.delivery.memory import MemoryIndex, MemoryItem, format_hits

TOOL = "memory_search"
DESCRIPTION = ("Search the project's memory (commit history [H], docs [K], a user's past corrections [F], "
               "notes from earlier fixes [X]) with BM25. Returns the best matching items with their source labels.")
MAX_K = 20


@dataclass
class Bm25Memory:
    """BM25 over the corpus; `default_k` hits when the agent does not ask for a number."""

    name: str = "bm25"
    default_k: int = 5
    index: MemoryIndex | None = field(default=None, repr=False)

    @classmethod
    def of(cls, items: list[MemoryItem], default_k: int = 5) -> Bm25Memory:
        """A BM25 memory already loaded with `items` (it keeps no state on disk)."""
        memory = cls(default_k=default_k)
        memory.load(items, Path("."))
        return memory

    def load(self, items: list[MemoryItem], state: Path) -> LoadReport:
        """Index `items` in memory (nothing is written under `state`)."""
        start = time.monotonic()
        self.index = MemoryIndex(items)
        return LoadReport(self.name, len(items), len(items), time.monotonic() - start)

    def tools(self) -> tuple[MemoryTool, ...]:
        """The one search tool."""
        params = {"type": "object", "properties": {
            "query": {"type": "string", "description": "Keywords to search for."},
            "k": {"type": "integer", "description": f"How many items to return (default {self.default_k}, at most {MAX_K})."},
        }, "required": ["query"], "additionalProperties": False}
        return (MemoryTool(TOOL, DESCRIPTION, params, SEARCH),)

    def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        """Search; the answer lists the hits' ids best first."""
        if name != TOOL or self.index is None:
            raise MemoryCallError(f"unknown memory tool {name!r}")
        query, k = arguments.get("query"), arguments.get("k")
        if not isinstance(query, str):
            raise MemoryCallError(f"{TOOL}: argument 'query' must be a string")
        if k is not None:
            try:
                if isinstance(k, bool) or not isinstance(k, int | float | str):
                    raise ValueError
                k = int(k)
            except ValueError:
                raise MemoryCallError(f"{TOOL}: argument 'k' must be an integer") from None
        k = self.default_k if k is None else max(1, min(k, MAX_K))
        hits = self.index.search(query, k)
        return Answer(format_hits(hits), tuple(h.item.id for h in hits), asked=k)

    def holds(self) -> frozenset[str]:
        """Every loaded item."""
        return frozenset(i.id for i in self.index.items) if self.index is not None else frozenset()

    def close(self) -> None:
        """Nothing to stop."""
