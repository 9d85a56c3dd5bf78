"""mem0 (PyPI `mem0ai`) as a memory backend: an LLM-curated memory over a local vector store, metered.

mem0 runs as its own process (sdebench/memory/mem0_server.py, an MCP server over stdio inside mem0's
pinned install dir, started by `McpProcess`), with its vector store (qdrant in local mode: files, no
server) and its history database under the episode's memory state dir, telemetry off. Its model calls
go to two sdebench gateways on loopback started beside it, one in front of its LLM and one in front of
its embedder, each with its own meter: the gateways hold the real key and price every call at the
configured prices (or litellm's price map), so the load report carries what loading cost (LLM calls,
tokens and dollars, apart from the agent's) and `usage()` what the episode's calls cost after it.

Loading adds one memory per corpus item (`add_memory` with the item rendered as the agent would see
it, and metadata carrying the item's id and source tag). With `infer` (mem0's default) mem0's LLM
extracts memories from each item (one extraction call and two embedding calls an item); without, each
item is stored as it is (one embedding call). Every memory mem0 derives from an item keeps that item's
metadata, so an answer's memories map back to the items they came from.

The agent gets mem0's tools under the names of mem0's own MCP server: `search_memories` (search),
`get_memories` and `get_memory` (read), and, with `write`, `add_memory` (write; the agent gives text
only: metadata naming an item is the loader's).

Options: `model` and `embedding_model` are names at `base_url` (an OpenAI-compatible endpoint), or,
without it, litellm model strings reached as litellm resolves them; `prices` and `embedding_prices`
(USD per million tokens, `input`/`output`) price them where litellm's map does not, `cost_tracking`
says what an unpriced model is (strict: a load error; ignore: free); `api_key_env` names the variable
holding the endpoint's key (read by the gateways in this process, never passed to mem0).
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdebench.delivery.backend import READ, SEARCH, WRITE, Answer, LoadReport, MemoryLoadError, MemoryTool
from sdebench.delivery.memory import MemoryItem

SYSTEM = "mem0"
DRIVER = Path(__file__).with_name("mem0_server.py")
USER = "project"  # the one user scope of the memories (shown in mem0's answers)
GATEWAY_LOG = "gateway.jsonl"  # the gateways' events (model calls, errors), one JSON object a line
TOOL_KINDS = {"search_memories": SEARCH, "get_memories": READ, "get_memory": READ, "add_memory": WRITE}
QUERY_ARGS = {"search_memories": "query"}
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"  # mem0's own default embedder


def _first_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return (lines[0] if lines else "").strip()[:limit]


@dataclass
class Mem0Memory:
    """mem0 with a local vector store; its LLM and embedder are reached through metering gateways."""

    name: str = SYSTEM
    infer: bool = True  # mem0 extracts memories with its LLM when adding (false: stores each item as is)
    write: bool = False  # also offer mem0's add tool to the agent
    base_url: str | None = None  # OpenAI-compatible endpoint of the LLM and the embedder
    model: str | None = None  # the LLM (a name at base_url, else a litellm model string)
    embedding_model: str | None = None  # the embedder (default: mem0's own default, text-embedding-3-small)
    embedding_dims: int = 256
    timeout_s: float = 120.0  # start-up, and each call (a load's add of one item included)
    cache_dir: str | None = None  # install cache (null: $SDEBENCH_AGENT_CACHE or /var/tmp/sdebench-agents)
    api_key_env: str | None = None  # env var with the endpoint's key (null: none, or litellm's own lookup)
    prices: dict[str, Any] | None = None  # USD per million tokens of the LLM (null: litellm's price map)
    embedding_prices: dict[str, Any] | None = None  # ... of the embedder
    cost_tracking: str = "strict"  # an unpriced model: strict = load error, ignore = its calls cost 0
    _proc: Any = field(default=None, init=False, repr=False)
    _gateways: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _tools: tuple[MemoryTool, ...] = field(default=(), init=False, repr=False)
    _held: set[str] = field(default_factory=set, init=False, repr=False)
    _load_usage: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _state: Path | None = field(default=None, init=False, repr=False)

    # --- loading -------------------------------------------------------------------------------
    def load(self, items: list[MemoryItem], state: Path) -> LoadReport:
        """Start mem0 (and its gateways) with its state under `state` and add every item; MemoryLoadError if it cannot."""
        start = time.monotonic()
        state = Path(state)
        try:
            self._start(state)
            started = time.monotonic() - start
            stored = 0
            for item in items:
                stored += self._add(item)
        except BaseException:
            self.close()  # a half-started system is stopped; the episode fails on the error
            raise
        self._load_usage = self._totals()
        u = self._load_usage
        from sdebench.memory.install import SYSTEMS

        return LoadReport(
            self.name,
            len(items),
            stored,
            time.monotonic() - start,
            llm_calls=u["llm_calls"],
            tokens=u["tokens"],
            cost_usd=u["cost_usd"],
            version=SYSTEMS[SYSTEM].version,
            extra={
                "infer": self.infer,
                "items_held": len(self._held),
                "startup_s": round(started, 3),  # mem0's process and its gateways, before the first item
                **{
                    k: u[k]
                    for k in (
                        "llm_prompt_tokens",
                        "llm_completion_tokens",
                        "embedding_calls",
                        "embedding_tokens",
                    )
                },
            },
        )

    def _start(self, state: Path) -> None:
        from sdebench.agents.installed.install import InstallError
        from sdebench.memory.install import installed
        from sdebench.memory.mcp_stdio import McpProcess

        if self._proc is not None:
            raise MemoryLoadError("mem0 is already loaded (one load per backend)")
        if not self.model:
            raise MemoryLoadError(
                "mem0 needs its LLM: set memory.model (and memory.base_url for an OpenAI-compatible endpoint)"
            )
        try:
            install = installed(SYSTEM, self.cache_dir)
        except InstallError as e:
            raise MemoryLoadError(f"mem0 is not installed and could not be: {_first_line(str(e))}") from None
        state.mkdir(parents=True, exist_ok=True)
        self._state = state = state.resolve()  # absolute: the server runs with the state dir as its cwd
        self._gateways, self._held = {}, set()
        token = self._start_gateways(state)
        env = {
            "PYTHONPATH": str(install / "site"),
            "MEM0_DIR": str(state),
            "MEM0_TELEMETRY": "False",
            "SDEBENCH_MEM0_LLM_BASE_URL": self._gateways["llm"].base_url + "/v1",
            "SDEBENCH_MEM0_LLM_MODEL": self.model,
            "SDEBENCH_MEM0_EMBED_BASE_URL": self._gateways["embedder"].base_url + "/v1",
            "SDEBENCH_MEM0_EMBED_MODEL": self.embedding_model or DEFAULT_EMBEDDING_MODEL,
            "SDEBENCH_MEM0_EMBED_DIMS": str(int(self.embedding_dims)),
            "SDEBENCH_MEM0_API_KEY": token,
            "SDEBENCH_MEM0_INFER": "1" if self.infer else "0",
            "SDEBENCH_MEM0_USER": USER,
            "SDEBENCH_MEM0_TIMEOUT_S": str(self.timeout_s),
            # the gateways are on loopback: no proxy of the host may stand between
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        # -P: not the driver's own dir on the path (sdebench/memory/mem0.py would shadow the mem0 package);
        # -S: none of the host's site-packages, only mem0's install dir
        self._proc = McpProcess([sys.executable, "-P", "-S", str(DRIVER)], state, env, timeout=self.timeout_s)
        self._proc.start()
        declared = {t["name"]: t for t in self._proc.tools()}
        missing = sorted(set(TOOL_KINDS) - set(declared))
        if missing:
            raise MemoryLoadError(f"mem0's server does not offer {', '.join(missing)}")
        self._tools = tuple(
            self._tool(declared[n]) for n in TOOL_KINDS if self.write or TOOL_KINDS[n] != WRITE
        )

    def _start_gateways(self, state: Path) -> str:
        """The gateways in front of the LLM and the embedder (one token for both); the token."""
        from sdebench.agents.accounting import PricingError, resolve_pricing
        from sdebench.agents.base import Limits
        from sdebench.agents.model import ModelSettings
        from sdebench.errors import ConfigError
        from sdebench.gateway.server import make_gateway, new_token

        token = new_token()
        # the memory's own calls have no budget of the episode's (its costs are reported, not capped)
        limits = Limits(max_turns=sys.maxsize, max_cost_usd=math.inf, max_wall_s=math.inf)
        log = _EventLog(state / GATEWAY_LOG)
        entries = {
            "llm": (self.model, self.prices),
            "embedder": (self.embedding_model or DEFAULT_EMBEDDING_MODEL, self.embedding_prices),
        }
        for role, (model, prices) in entries.items():
            litellm_model = model
            if self.base_url:
                litellm_model = model if model.startswith("openai/") else f"openai/{model}"
            settings = ModelSettings(
                name=model,
                litellm_model=litellm_model,
                api_base=self.base_url,
                api_key_env=self.api_key_env,
                prices=dict(prices or {}),
                cost_tracking=self.cost_tracking,
            )
            try:
                pricing = resolve_pricing(settings.litellm_model, settings.prices, settings.cost_tracking)
                key = settings.api_key()
            except (PricingError, ConfigError) as e:
                raise MemoryLoadError(f"mem0's {role} {model!r}: {_first_line(str(e))}") from None
            redact = (key,) if key and self.api_key_env else ()
            gw = make_gateway(
                settings, pricing, limits, time.monotonic(), log.role(role), token=token, redact=redact
            )
            self._gateways[role] = gw.start(tcp=True)
        return token

    def _add(self, item: MemoryItem) -> int:
        """Add one item; the number of memories mem0 stored from it."""
        args = {"text": item.render(), "metadata": {"item_id": item.id, "source": item.source}}
        try:
            text, is_error, _ = self._proc.call("add_memory", args)
        except Exception as e:  # noqa: BLE001 - a dead or hung server is a load error in one line
            raise MemoryLoadError(
                f"mem0 could not add memory item {item.id}: {type(e).__name__}: {_first_line(str(e))}"
            ) from None
        if is_error:
            raise MemoryLoadError(f"mem0 could not add memory item {item.id}: {_first_line(text)}")
        results = _results(text)
        if results:
            self._held.add(item.id)
        return len(results)

    def _tool(self, declared: dict[str, Any]) -> MemoryTool:
        name = declared["name"]
        params = dict(declared.get("input_schema") or {"type": "object", "properties": {}})
        if name == "add_memory":
            # the agent writes text; metadata naming a corpus item is the loader's alone
            params = {
                **params,
                "properties": {k: v for k, v in (params.get("properties") or {}).items() if k == "text"},
                "required": ["text"],
            }
        return MemoryTool(
            name, declared.get("description") or "", params, TOOL_KINDS[name], QUERY_ARGS.get(name)
        )

    # --- the episode ---------------------------------------------------------------------------
    def tools(self) -> tuple[MemoryTool, ...]:
        """mem0's tools the agent gets: search and read, plus add with `write`."""
        return self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        """Forward one tool call to mem0; the answer's items are the corpus items of the memories it shows."""
        if self._proc is None or name not in {t.name for t in self._tools}:
            raise ValueError(f"unknown memory tool {name!r}")
        args = dict(arguments or {})
        if name == "add_memory":
            args = {"text": str(args.get("text", ""))}
        try:
            text, is_error, _ = self._proc.call(name, args)
        except Exception as e:  # noqa: BLE001 - a crashed or hung server: one line for the agent's error result
            raise RuntimeError(
                f"mem0 did not answer {name}: {type(e).__name__}: {_first_line(str(e))}"
            ) from None
        if self._state is not None:
            # an error of the vector store may name its files: no host path reaches the agent
            text = text.replace(str(self._state), "[memory state]")
        if is_error:
            return Answer(text, (), error=True)
        return Answer(text, _item_ids(text))

    def holds(self) -> frozenset[str]:
        """The items mem0 kept at least one memory of (with `infer`, an item it extracted nothing from is not held)."""
        return frozenset(self._held)

    def usage(self) -> dict[str, Any]:
        """The metered model calls of mem0: `load` (what loading cost) and `episode` (every call since)."""
        total = self._totals()
        load = self._load_usage or {k: 0 for k in total}
        return {"load": dict(load), "episode": {k: total[k] - load[k] for k in total}}

    def _totals(self) -> dict[str, Any]:
        llm = self._gateways["llm"].meter.usage if "llm" in self._gateways else None
        emb = self._gateways["embedder"].meter.usage if "embedder" in self._gateways else None
        out = {
            "llm_calls": llm.model_calls if llm else 0,
            "llm_prompt_tokens": llm.prompt_tokens if llm else 0,
            "llm_completion_tokens": llm.completion_tokens if llm else 0,
            "embedding_calls": emb.model_calls if emb else 0,
            "embedding_tokens": emb.prompt_tokens if emb else 0,
        }
        out["tokens"] = out["llm_prompt_tokens"] + out["llm_completion_tokens"] + out["embedding_tokens"]
        out["cost_usd"] = (llm.cost_usd if llm else 0.0) + (emb.cost_usd if emb else 0.0)
        return out

    def close(self) -> None:
        """Stop mem0 and its gateways; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.close()
        for gw in self._gateways.values():
            gw.stop()


def _results(text: str) -> list[dict[str, Any]]:
    """The memories of a mem0 answer (a `results` list, or one memory)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return [r for r in data["results"] if isinstance(r, dict)]
    return [data] if isinstance(data, dict) and "memory" in data else []


def _item_ids(text: str) -> tuple[str, ...]:
    """The corpus items an answer's memories came from (their metadata), best first, each once."""
    seen: dict[str, None] = {}
    for r in _results(text):
        item = (r.get("metadata") or {}).get("item_id")
        if isinstance(item, str) and item:
            seen.setdefault(item, None)
    return tuple(seen)


class _EventLog:
    """The gateways' events as JSON lines in the state dir (each tagged with its gateway's role)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def role(self, role: str) -> Any:
        """The log callable of one gateway."""

        def log(kind: str, **data: Any) -> None:
            line = json.dumps(
                {"t": round(time.time(), 3), "gateway": role, "kind": kind, **data}, default=str
            )
            with self._lock, open(self.path, "a") as f:
                f.write(line + "\n")

        return log
