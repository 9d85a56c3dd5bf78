"""The memory tool over MCP: `memory_search`, served with the official `mcp` SDK (streamable HTTP).

Each call goes through the episode's toolbox, so it is logged to the trajectory and counted in
`tool_calls["memory_search"]` exactly like the built-in agent's calls of the same tool.
"""

from __future__ import annotations

from typing import Any

import anyio

from sdebench.agents.base import Toolbox
from sdebench.agents.tools import SPECS

TOOL = "memory_search"
SERVER_NAME = "memory"  # the name agents register the server under (Claude Code: mcp__memory__memory_search)
PATH = "/mcp"


def memory_app(toolbox: Toolbox, log: Any = None) -> Any:
    """A Starlette app serving `memory_search` at /mcp (stateless, JSON responses)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    server = MCPServer(SERVER_NAME, instructions="Search the project's memory: history, docs, past corrections, past fixes.",
                       log_level="WARNING")
    description = SPECS[TOOL][0]

    @server.tool(name=TOOL, description=description)
    async def memory_search(query: str, k: int | None = None) -> str:
        args: dict[str, Any] = {"query": query} if k is None else {"query": query, "k": k}
        result = await anyio.to_thread.run_sync(toolbox.call, TOOL, args)
        if log is not None:
            log("mcp_call", name=TOOL, arguments=args, error=result.error, chars=len(result.output))
        return result.output

    # The gateway checks the episode's token on every request; the Host header is the relay's loopback one.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True,
                                      transport_security=security)
