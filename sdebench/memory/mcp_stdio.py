"""A memory system that is an MCP server over stdio, driven from synchronous code.

The server runs as a child process (started with the official `mcp` SDK's stdio client); an
event loop in a background thread holds the session, and `call`/`tools` block on it with a time
limit. The child sees only the SDK's default environment plus what the backend passes (no API
keys of the host), runs with its state dir as working directory, and writes its stderr to a log
file there (read back into the error when it dies).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sdebench.delivery.backend import MemoryLoadError

STDERR_LOG = "server.stderr.log"


def _text(result: Any) -> str:
    """The text of a tool result: its text blocks joined; structured content as JSON when there are none."""
    import json

    parts = [getattr(b, "text", "") for b in (getattr(result, "content", None) or []) if getattr(b, "type", "") == "text"]
    if parts:
        return "\n".join(parts)
    structured = getattr(result, "structured_content", None)
    return json.dumps(structured) if structured is not None else ""


class McpProcess:
    """One MCP server child process and its client session."""

    def __init__(self, argv: list[str], state: Path, env: dict[str, str] | None = None, *, timeout: float = 120.0):
        if not argv:
            raise MemoryLoadError("no command for the memory server")
        self.argv = [str(a) for a in argv]
        self.state = Path(state)
        self.env = dict(env or {})
        self.timeout = timeout
        self._portal_cm: Any = None
        self._portal: Any = None
        self._session_cm: Any = None
        self._session: Any = None
        self._errlog: Any = None

    def start(self) -> None:
        """Spawn the server and initialize the session; MemoryLoadError (with its stderr's tail) if it fails."""
        from anyio.from_thread import start_blocking_portal

        self.state.mkdir(parents=True, exist_ok=True)
        self._errlog = open(self.state / STDERR_LOG, "w")  # noqa: SIM115 - closed in close()
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._session_cm = self._portal.wrap_async_context_manager(self._open())
            self._session = self._session_cm.__enter__()
        except BaseException as e:
            self.close()
            if not isinstance(e, Exception):
                raise
            raise MemoryLoadError(f"memory server {Path(self.argv[0]).name} did not start: {self._why(e)}") from None

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Any]:
        import anyio
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=self.env, cwd=str(self.state))
        async with (stdio_client(params, errlog=self._errlog) as (read, write),
                    ClientSession(read, write, read_timeout_seconds=self.timeout) as session):
            with anyio.fail_after(self.timeout):
                await session.initialize()
            yield session

    def _why(self, e: BaseException) -> str:
        """An exception plus the last line the server wrote to stderr."""
        msg = f"{type(e).__name__}: {e}".strip().splitlines()[0][:300] if str(e) else type(e).__name__
        try:
            tail = [ln for ln in (self.state / STDERR_LOG).read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            tail = []
        return msg + (f" (stderr: {tail[-1][:300]})" if tail else "")

    def tools(self) -> list[dict[str, Any]]:
        """The server's tools: name, description and input schema, as it declares them."""
        result = self._portal.call(self._session.list_tools)
        return [{"name": t.name, "description": t.description or "", "input_schema": dict(t.input_schema or {})}
                for t in result.tools]

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool, Any]:
        """Call one tool: its text, whether the server flagged an error, and its structured content."""
        if self._session is None:
            raise RuntimeError("the memory server is not running")
        result = self._portal.call(self._session.call_tool, name, arguments)
        return _text(result), bool(getattr(result, "is_error", False)), getattr(result, "structured_content", None)

    def close(self) -> None:
        """End the session and the child process; safe to call twice."""
        session_cm, portal_cm, self._session_cm, self._portal_cm = self._session_cm, self._portal_cm, None, None
        self._session = self._portal = None
        if session_cm is not None:
            with contextlib.suppress(BaseException):
                session_cm.__exit__(None, None, None)
        if portal_cm is not None:
            with contextlib.suppress(BaseException):
                portal_cm.__exit__(None, None, None)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None
