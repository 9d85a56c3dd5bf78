"""Claude Code (`@anthropic-ai/claude-code`): `claude -p TASK`, resumed with `claude -p FEEDBACK --resume ID`.

It speaks Anthropic Messages (streamed) to ANTHROPIC_BASE_URL with the episode token as its key;
non-essential traffic (telemetry, update checks) is off. The session id is chosen up front
(`--session-id`), so the resume needs nothing parsed from its output. Under memtool the memory
tool is its MCP server `memory` (tool `mcp__memory__memory_search`), and only that one
(`--strict-mcp-config`). As root, `--dangerously-skip-permissions` needs IS_SANDBOX=1.

Two switches keep what it sees to what the delivery gives it:
- ENABLE_TOOL_SEARCH=false: by default it lists MCP tools only behind its deferred-tool search
  (`ToolSearch`), so a model that never searches never sees `memory_search`; off, the tool is in the
  request's tools directly;
- CLAUDE_CODE_DISABLE_AUTO_MEMORY=1: its own file-based memory (a `# Memory` section in the system
  prompt telling the model to keep facts in `~/.claude/projects/<repo>/memory/`, indexed by a
  MEMORY.md loaded into every session) is off: a memory of the agent's own confounds a memory ablation.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from sdebench.agents.installed.base import HOME, InstalledAgent
from sdebench.agents.installed.install import InstallSpec
from sdebench.gateway.mcp_memory import SERVER_NAME

MCP_CONFIG = ".sdebench-mcp.json"


class ClaudeCodeAgent(InstalledAgent):
    """Claude Code in print mode."""

    name = "claude-code"
    spec = InstallSpec("npm", "@anthropic-ai/claude-code", "2.1.332", "node_modules/.bin/claude")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.session_id = str(uuid.uuid4())
        self.result: dict[str, Any] = {}

    def environment(self) -> dict[str, str]:
        """Gateway address and token; no traffic beyond the model calls; MCP tools listed directly; no auto memory."""
        return {
            "ANTHROPIC_BASE_URL": self.gateway_url,
            "ANTHROPIC_API_KEY": self.token(),
            "ANTHROPIC_SMALL_FAST_MODEL": self.model.name,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "IS_SANDBOX": "1",
            "ENABLE_TOOL_SEARCH": "false",
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
        }

    def write_config(self) -> None:
        """The MCP config naming the gateway's memory server (memtool only)."""
        if self.gateway.has_memory:
            cfg = {"mcpServers": {SERVER_NAME: {"type": "http", "url": self.mcp_url(),
                                                "headers": {"Authorization": f"Bearer {self.token()}"}}}}
            self.write_home(MCP_CONFIG, json.dumps(cfg, indent=2))

    def command(self, prompt: str, resume: bool) -> list[str]:
        """`claude -p PROMPT` with a fixed session id, or `--resume` of it."""
        argv = [self.executable, "-p", prompt, "--output-format", "json", "--dangerously-skip-permissions",
                "--model", self.model.name]
        argv += ["--resume", self.session_id] if resume else ["--session-id", self.session_id]
        if self.gateway.has_memory:
            argv += ["--mcp-config", f"{HOME}/{MCP_CONFIG}", "--strict-mcp-config"]
        return argv + list(self.settings.args)

    def after_run(self, stdout: str, res: Any) -> None:
        """Keep the result record `--output-format json` prints."""
        try:
            self.result = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
        except ValueError:
            self.result = {}
        if isinstance(self.result, dict) and self.result.get("session_id"):
            self.session_id = str(self.result["session_id"])

    def run_error(self, stdout: str) -> str | None:
        """Claude Code reports an API failure in its result record."""
        if isinstance(self.result, dict) and self.result.get("is_error"):
            return f"claude-code reported an error: {str(self.result.get('result'))[:300]}"
        return None
