"""The seam between an episode and a memory system: its tools, its answers and its load report.

A backend (`MemoryBackend`) is built from its config section (`memory.name`: a registered name or
`package.module:Class`, the section's other keys as options), loaded once per episode with the
task's memory items, called by the episode's toolbox (the built-in agent's tools and the gateway's
MCP server both go through it), and closed when the episode ends. Loading is part of the
experiment: `load` returns what went in and what it cost, and a failure to load raises
`MemoryLoadError`, which fails the episode (an empty memory would silently read as "memory does
not help").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from sdebench.delivery.memory import MemoryItem
from sdebench.errors import DeliveryError

SEARCH, READ, WRITE = "search", "read", "write"  # what a tool does (the diagnostics count searches)


class MemoryLoadError(DeliveryError):
    """A memory system that could not be started or loaded with the task's corpus."""


class MemoryCallError(DeliveryError, ValueError):
    """A memory tool call a system rejects (bad arguments); the message goes back to the agent."""


@dataclass(frozen=True)
class MemoryTool:
    """One tool a backend offers, under the backend's own name and description."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments (an object schema)
    kind: str = SEARCH  # search | read | write
    query_arg: str | None = "query"  # the argument holding a search's query (diagnostics)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema of this tool."""
        params = dict(self.parameters or {"type": "object", "properties": {}})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}


@dataclass(frozen=True)
class Answer:
    """What one call returned: the text the agent sees and the memory items it showed, best first."""

    text: str
    items: tuple[str, ...] = ()  # ids of the memory items (or the items a derived memory came from)
    error: bool = False
    asked: int | None = None  # how many results the search asked for, as the system applied it (None: unknown)


@dataclass
class LoadReport:
    """How a task's corpus entered a memory system (recorded with the episode)."""

    backend: str
    items: int  # memory items offered to the backend
    stored: int  # what the backend holds after loading (entities, notes, memories)
    seconds: float  # wall time to start the system and load the corpus
    llm_calls: int = 0  # model calls the load made (an extracting memory such as mem0)
    tokens: int = 0  # their prompt + completion tokens
    cost_usd: float = 0.0  # their priced cost (memory cost, apart from the agent's)
    version: str | None = None  # the backend's pinned version
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this report."""
        return asdict(self)


def strings(value: Any) -> list[str]:
    """Every string inside a JSON value, in order (the text of a write call's arguments)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@runtime_checkable
class MemoryBackend(Protocol):
    """A memory system serving one episode's memory."""

    name: str

    def load(self, items: list[MemoryItem], state: Path) -> LoadReport:
        """Start the system with its state under `state` and load `items`; MemoryLoadError if it cannot."""
        ...

    def tools(self) -> tuple[MemoryTool, ...]:
        """The tools the agent gets (after `load`)."""
        ...

    def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        """Run one tool; may raise (the toolbox turns an exception into an error result)."""
        ...

    def holds(self) -> frozenset[str]:
        """The ids of the memory items the system was loaded with (for `searchable`)."""
        ...

    def close(self) -> None:
        """Stop the system and release what it holds; safe to call twice."""
        ...
