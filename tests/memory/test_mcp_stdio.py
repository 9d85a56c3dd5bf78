"""An MCP server over stdio, driven synchronously: a real server (the official SDK's), started and stopped."""

from __future__ import annotations

import sys

import pytest

from sdebench.delivery.backend import MemoryLoadError
from sdebench.memory.mcp_stdio import STDERR_LOG, McpProcess

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool(name="find_notes", description="Find notes by words.")
def find_notes(query: str) -> str:
    return f"notes about {query}"


@server.tool(name="fail", description="Always fails.")
def fail() -> str:
    raise ValueError("no such note")


server.run()
'''


def test_tools_and_calls_of_a_real_server(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    p = McpProcess([sys.executable, str(script)], tmp_path / "state", timeout=60)
    p.start()
    try:
        tools = {t["name"]: t for t in p.tools()}
        assert tools["find_notes"]["description"] == "Find notes by words."
        assert tools["find_notes"]["input_schema"]["required"] == ["query"]
        assert p.call("find_notes", {"query": "rounding"})[:2] == ("notes about rounding", False)
        text, error, _ = p.call("fail", {})
        assert error and text.startswith("Error executing tool fail")
    finally:
        p.close()
    p.close()  # twice is fine
    with pytest.raises(RuntimeError, match="not running"):
        p.call("find_notes", {"query": "x"})


def test_a_server_that_dies_at_start_is_one_line_with_its_stderr(tmp_path):
    p = McpProcess([sys.executable, "-c", "import sys; print('cannot open the vault', file=sys.stderr); sys.exit(3)"],
                   tmp_path / "state", timeout=30)
    with pytest.raises(MemoryLoadError, match=r"did not start: .*\(stderr: cannot open the vault\)") as e:
        p.start()
    assert "\n" not in str(e.value)
    assert (tmp_path / "state" / STDERR_LOG).is_file()


def test_a_missing_command_is_a_load_error(tmp_path):
    with pytest.raises(MemoryLoadError, match="did not start"):
        McpProcess(["/nonexistent/memory-server"], tmp_path / "state", timeout=30).start()
