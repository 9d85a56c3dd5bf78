"""mem0 as an MCP server over stdio: mem0's own operations as tools, run inside mem0's install dir.

    PYTHONPATH=<mem0 install>/site python -P -S mem0_server.py

This file runs under the host's interpreter with only mem0's install dir on its path (`-S`: no
site-packages of the host; `-P`: not this file's dir, which holds sdebench modules named like mem0's
package), so it imports the standard library, mem0 and the `mcp` SDK pinned beside it, never sdebench.
The host (sdebench.memory.mem0) configures it through the environment:

    MEM0_DIR                      the state dir: the vector store (qdrant in local mode: files, no server)
                                  in qdrant/, mem0's history database history.db
    MEM0_TELEMETRY                False: mem0's telemetry and its notices stay off (the host sets it)
    SDEBENCH_MEM0_LLM_BASE_URL    OpenAI-compatible address of the LLM (a metering gateway on loopback)
    SDEBENCH_MEM0_LLM_MODEL       its model name
    SDEBENCH_MEM0_EMBED_BASE_URL  OpenAI-compatible address of the embedder
    SDEBENCH_MEM0_EMBED_MODEL     its model name
    SDEBENCH_MEM0_EMBED_DIMS      the length of its vectors
    SDEBENCH_MEM0_API_KEY         the key both addresses take (the gateways' token)
    SDEBENCH_MEM0_INFER           1: adding extracts memories with the LLM (mem0's default); 0: stores the text as is
    SDEBENCH_MEM0_USER            the one user scope every memory is kept under
    SDEBENCH_MEM0_TIMEOUT_S       the time limit of each model call

Tools, under the names of mem0's own MCP server: `search_memories` (mem0 `search`), `get_memories`
(`get_all`), `get_memory` (`get`) and `add_memory` (`add`, with the item's metadata when the host loads
the corpus). Each answers with mem0's result as JSON; a failure of mem0 is the tool's error.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

SEARCH_LIMIT = 5  # results of a search that names no limit
MAX_SEARCH = 20
LIST_LIMIT = 20  # memories a listing returns when it names no limit
MAX_LIST = 100


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"mem0_server: {name} is not set")
    return value


def build_memory() -> Any:
    """mem0's Memory, configured from the environment: OpenAI-compatible LLM and embedder, local qdrant, history db."""
    from mem0 import Memory

    state = _env("MEM0_DIR")
    key = _env("SDEBENCH_MEM0_API_KEY")
    dims = int(_env("SDEBENCH_MEM0_EMBED_DIMS"))
    config = {
        "llm": {
            "provider": "openai",
            "config": {
                "model": _env("SDEBENCH_MEM0_LLM_MODEL"),
                "api_key": key,
                "openai_base_url": _env("SDEBENCH_MEM0_LLM_BASE_URL"),
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": _env("SDEBENCH_MEM0_EMBED_MODEL"),
                "api_key": key,
                "embedding_dims": dims,
                "openai_base_url": _env("SDEBENCH_MEM0_EMBED_BASE_URL"),
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "memories",
                "embedding_model_dims": dims,
                "path": os.path.join(state, "qdrant"),
                "on_disk": True,
            },
        },
        "history_db_path": os.path.join(state, "history.db"),
    }
    memory = Memory.from_config(config)
    timeout = float(os.environ.get("SDEBENCH_MEM0_TIMEOUT_S") or 120)
    # mem0's config has no time limit for its OpenAI clients (the SDK's default is 10 minutes)
    for part in (memory.llm, memory.embedding_model):
        client = getattr(part, "client", None)
        if client is not None and hasattr(client, "with_options"):
            part.client = client.with_options(timeout=timeout)
    return memory


def _limit(value: Any, default: int, most: int) -> int:
    return default if value is None else max(1, min(int(value), most))


def make_server(memory: Any, user: str, infer: bool) -> Any:
    """The MCP server of `memory`: its tools act on `user`'s memories; `add_memory` extracts when `infer`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("mem0")
    lock = threading.Lock()  # tools run in worker threads; mem0's stores are used one call at a time
    scope = {"user_id": user}

    def run(operation: Any, *args: Any, **kwargs: Any) -> str:
        """One mem0 operation, its result as JSON; its failure as the tool's error, in one line (the SDK
        would send only "Error executing tool" for any exception but a ToolError)."""
        try:
            with lock:
                result = operation(*args, **kwargs)
        except Exception as e:  # every failure of mem0 is the caller's to read
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            raise ToolError(f"{type(e).__name__}: {lines[0][:500]}" if lines else type(e).__name__) from e
        if result is None:
            raise ToolError("no memory with that id")
        return json.dumps(result, ensure_ascii=False, default=str)

    @server.tool(
        description="Search the stored memories by meaning: the memories closest to the query, best first, "
        f"with their scores and metadata (limit: how many, default {SEARCH_LIMIT}, at most {MAX_SEARCH})."
    )
    def search_memories(query: str, limit: int | None = None) -> str:
        """mem0 `search`."""
        return run(memory.search, query, top_k=_limit(limit, SEARCH_LIMIT, MAX_SEARCH), filters=scope)

    @server.tool(
        description=f"List the stored memories, without a search (limit: default {LIST_LIMIT}, at most {MAX_LIST})."
    )
    def get_memories(limit: int | None = None) -> str:
        """mem0 `get_all`."""
        return run(memory.get_all, filters=scope, top_k=_limit(limit, LIST_LIMIT, MAX_LIST))

    @server.tool(description="Fetch one memory by its memory id.")
    def get_memory(memory_id: str) -> str:
        """mem0 `get`."""
        return run(memory.get, memory_id)

    add_description = (
        "Store new information. The memory extracts the facts worth keeping from the text and "
        "stores them as memories."
        if infer
        else "Store the text as a memory."
    )

    @server.tool(description=add_description)
    def add_memory(text: str, metadata: dict[str, Any] | None = None) -> str:
        """mem0 `add`."""
        return run(memory.add, text, user_id=user, metadata=metadata or None, infer=infer)

    return server


def main() -> int:
    """Build mem0 from the environment and serve its tools over stdio."""
    # mem0 and its clients log to stderr, which the host keeps in a file beside the state
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    memory = build_memory()
    infer = os.environ.get("SDEBENCH_MEM0_INFER", "1") not in ("0", "false", "False")
    make_server(memory, os.environ.get("SDEBENCH_MEM0_USER") or "project", infer).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
