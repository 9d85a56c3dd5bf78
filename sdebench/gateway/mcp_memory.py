"""The memory tool over MCP (`memory_search`, served with the official `mcp` SDK, streamable HTTP) and
the same search for the `memory_search` command inside the sandbox (`POST /memory_search`).

Both go through the episode's toolbox, so a call either way is logged to the trajectory (`tool`),
counted in `tool_calls["memory_search"]` and seen by the retrieval diagnostics exactly like the
built-in agent's calls of the tool, and returns the same text for the same query. The index is the
episode's own; nothing in an answer names the task, the delivery or a host path.
"""

from __future__ import annotations

from typing import Any

import anyio

from sdebench.agents.base import Toolbox
from sdebench.agents.tools import SPECS

TOOL = "memory_search"
SERVER_NAME = "memory"  # the name agents register the server under (Claude Code: mcp__memory__memory_search)
PATH = "/mcp"
COMMAND_PATH = "/memory_search"  # what the in-sandbox command posts to (`memory_command.py`)
INSTRUCTIONS = "Search the project's memory: history, docs, past corrections, past fixes."


async def search(toolbox: Toolbox, log: Any, query: Any, k: Any, via: str) -> tuple[str, bool]:
    """One memory search through the toolbox (its output and whether it was an error), logged as
    `mcp_call` (the MCP tool) or `command_call` (the command)."""
    args: dict[str, Any] = {"query": query} if k is None else {"query": query, "k": k}
    result = await anyio.to_thread.run_sync(toolbox.call, TOOL, args)
    if log is not None:
        log(f"{via}_call", name=TOOL, arguments=args, error=result.error, chars=len(result.output))
    return result.output, result.error


def memory_app(toolbox: Toolbox, log: Any = None) -> Any:
    """A Starlette app serving `memory_search` at /mcp (stateless, JSON responses)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    description = SPECS[TOOL][0]

    @server.tool(name=TOOL, description=description)
    async def memory_search(query: str, k: int | None = None) -> str:
        output, _ = await search(toolbox, log, query, k, "mcp")
        return output

    # The gateway checks the episode's token on every request; the Host header is the relay's loopback one.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True,
                                      transport_security=security)


def command_route(toolbox: Toolbox, log: Any = None) -> Any:
    """The Starlette route of the in-sandbox command: POST {"query": str, "k": int?} -> {"output", "error"}."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def endpoint(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return JSONResponse({"output": 'Error: send a JSON object {"query": ..., "k": ...}', "error": True}, 400)
        output, error = await search(toolbox, log, body.get("query"), body.get("k"), "command")
        return JSONResponse({"output": output, "error": error})

    return Route(COMMAND_PATH, endpoint, methods=["POST"])
