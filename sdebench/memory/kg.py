"""The knowledge-graph memory: the reference MCP memory server (npm `@modelcontextprotocol/server-memory`).

Loading: one entity per memory item, named by the item's id, typed by its source (commit, document,
preference, past_fix), whose observations are the item's title and then its text, paragraph by
paragraph, sent through the server's own `create_entities` tool; the server keeps the graph in a
JSONL file under the episode's memory state dir. The agent gets the server's search and read tools
(`search_nodes`, `open_nodes`, `read_graph`) with the server's own descriptions and schemas, and with
`write=true` its `create_entities`, `create_relations` and `add_observations` as well (never its
delete tools). The server's search matches the query as one substring of names, types and
observations; its answers are JSON graphs, whose entity names give the items shown, in its order.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdebench.delivery.backend import (
    READ,
    SEARCH,
    WRITE,
    Answer,
    LoadReport,
    MemoryCallError,
    MemoryLoadError,
    MemoryTool,
)
from sdebench.delivery.memory import MemoryItem
from sdebench.memory.mcp_stdio import McpProcess

KINDS = {"search_nodes": SEARCH, "open_nodes": READ, "read_graph": READ,
         "create_entities": WRITE, "create_relations": WRITE, "add_observations": WRITE}
ENTITY_TYPES = {"H": "commit", "K": "document", "F": "preference", "X": "past_fix"}
GRAPH_FILE = "memory.jsonl"
BATCH = 200  # entities per create_entities call (a large corpus is about 2,700 items)


def entity_of(item: MemoryItem) -> dict[str, Any]:
    """The entity one memory item becomes: named by its id, typed by its source, title then paragraphs."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", item.text) if p.strip()]
    return {"name": item.id, "entityType": ENTITY_TYPES.get(item.source, item.source), "observations": [item.title, *paragraphs]}


def shown_names(text: str) -> list[str]:
    """The entity names a graph answer shows, in its order (nothing if it is no graph)."""
    try:
        graph = json.loads(text)
    except ValueError:
        return []
    entities = graph.get("entities") if isinstance(graph, dict) else None
    return [e["name"] for e in entities or [] if isinstance(e, dict) and isinstance(e.get("name"), str)]


@dataclass
class KnowledgeGraphMemory:
    """The reference MCP knowledge-graph server, started per episode over stdio."""

    name: str = "kg"
    cache_dir: str | None = None
    timeout_s: float = 120.0
    write: bool = False
    _server: McpProcess | None = field(default=None, repr=False)
    _tools: tuple[MemoryTool, ...] = field(default=(), repr=False)
    _ids: frozenset[str] = field(default=frozenset(), repr=False)

    def load(self, items: list[MemoryItem], state: Path) -> LoadReport:
        """Start the server on a fresh graph file under `state` and create one entity per item."""
        from sdebench.agents.installed.install import InstallError
        from sdebench.memory.install import SYSTEMS, entry

        start = time.monotonic()
        node = shutil.which("node")
        if node is None:
            raise MemoryLoadError("memory=kg needs Node.js (`node` is not on PATH)")
        try:
            script = entry("kg", self.cache_dir)
        except InstallError as e:
            raise MemoryLoadError(f"memory=kg: {e}") from None
        state.mkdir(parents=True, exist_ok=True)
        self._server = McpProcess([node, str(script)], state, {"MEMORY_FILE_PATH": str(state / GRAPH_FILE)},
                                  timeout=self.timeout_s)
        self._server.start()
        try:
            declared = {t["name"]: t for t in self._server.tools()}
            wanted = [n for n, kind in KINDS.items() if kind != WRITE or self.write]
            missing = [n for n in wanted if n not in declared]
            if missing:
                raise MemoryLoadError(f"memory=kg: the server offers no {', '.join(missing)}")
            self._tools = tuple(MemoryTool(n, declared[n]["description"], declared[n]["input_schema"], KINDS[n],
                                           "query" if KINDS[n] == SEARCH else None) for n in wanted)
            for n in range(0, len(items), BATCH):
                text, error, _ = self._server.call("create_entities", {"entities": [entity_of(i) for i in items[n:n + BATCH]]})
                if error:
                    raise MemoryLoadError(f"memory=kg: create_entities failed: {text[:200]}")
            stored = shown_names(self._server.call("read_graph", {})[0])
        except MemoryLoadError:
            self.close()
            raise
        except Exception as e:  # noqa: BLE001 - any failure to load is the episode's error, in one line
            self.close()
            raise MemoryLoadError(f"memory=kg: loading failed: {type(e).__name__}: {e}") from None
        self._ids = frozenset(i.id for i in items) & frozenset(stored)
        return LoadReport(self.name, len(items), len(stored), time.monotonic() - start, version=SYSTEMS["kg"].version)

    def tools(self) -> tuple[MemoryTool, ...]:
        """The server's search and read tools (and its create/add tools with write=true)."""
        return self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        """Forward one call to the server; the items are the loaded entities its answer shows."""
        if self._server is None or name not in {t.name for t in self._tools}:
            raise MemoryCallError(f"unknown memory tool {name!r}")
        text, error, _ = self._server.call(name, arguments)
        items = tuple(dict.fromkeys(n for n in shown_names(text) if n in self._ids)) if not error else ()
        return Answer(text, items, error)

    def holds(self) -> frozenset[str]:
        """The items loaded as entities."""
        return self._ids

    def close(self) -> None:
        """Stop the server."""
        if self._server is not None:
            self._server.close()
            self._server = None
