"""The memory system's tools over MCP (served with the official `mcp` SDK, streamable HTTP) and the
BM25 search for the `memory_search` command inside the sandbox (`POST /memory_search`).

The MCP server lists exactly the memory tools of the episode's toolbox, under the memory system's
own names, descriptions and argument schemas (BM25: `memory_search`; the knowledge graph:
`search_nodes`, `open_nodes`, ...), and answers each call through the toolbox, so a call is logged
to the trajectory (`tool`), counted in `tool_calls` and seen by the retrieval diagnostics exactly
like the built-in agent's calls, and returns the same text. The memory is the episode's own;
nothing in an answer names the task, the delivery or a host path.
"""

from __future__ import annotations

from typing import Any

import anyio

from sdebench.agents.base import Toolbox

TOOL = "memory_search"
SERVER_NAME = "memory"  # the name agents register the server under (Claude Code: mcp__memory__memory_search)
PATH = "/mcp"
COMMAND_PATH = "/memory_search"  # what the in-sandbox command posts to (`memory_command.py`)
INSTRUCTIONS = "Search the project's memory: history, docs, past corrections, past fixes."


async def call(toolbox: Toolbox, log: Any, name: str, args: dict[str, Any], via: str) -> tuple[str, bool]:
    """One memory tool call through the toolbox (its output and whether it was an error), logged as
    `mcp_call` (over MCP) or `command_call` (the command)."""
    result = await anyio.to_thread.run_sync(toolbox.call, name, args)
    if log is not None:
        log(f"{via}_call", name=name, arguments=args, error=result.error, chars=len(result.output))
    return result.output, result.error


async def search(toolbox: Toolbox, log: Any, query: Any, k: Any, via: str) -> tuple[str, bool]:
    """One BM25 `memory_search` through the toolbox (the in-sandbox command's call)."""
    args: dict[str, Any] = {"query": query} if k is None else {"query": query, "k": k}
    return await call(toolbox, log, TOOL, args, via)


def memory_app(toolbox: Toolbox, log: Any = None) -> Any:
    """A Starlette app serving the toolbox's memory tools at /mcp (stateless, JSON responses)."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.transport_security import TransportSecuritySettings

    tools = {s["function"]["name"]: s["function"] for s in toolbox.schemas() if s["function"]["name"] in toolbox.memory_names()}

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[types.Tool(name=n, description=f["description"], input_schema=f["parameters"])
                                            for n, f in tools.items()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        name = params.name
        if name not in tools:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"Error: unknown tool {name!r}")],
                                        is_error=True)
        output, error = await call(toolbox, log, name, dict(params.arguments or {}), "mcp")
        return types.CallToolResult(content=[types.TextContent(type="text", text=output)], is_error=error)

    server = Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool,
                    get_tool_input_schema=lambda name: tools[name]["parameters"] if name in tools else None)
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
