"""Gemini CLI (`@google/gemini-cli`): `gemini -p TASK`, resumed with `gemini -p FEEDBACK --resume ID`.

It runs on the pinned Node installed beside it (`node.py`) and speaks Google's Gemini API
(`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`), which the gateway serves, at
GOOGLE_GEMINI_BASE_URL with the episode token as its API key (`x-goog-api-key`); its auth type is
chosen in the settings (`security.auth.selectedType: gemini-api-key`), since headless mode takes no
other. The session id is chosen up front (`--session-id`), so the resume needs nothing parsed from
its output; `--yolo` approves its tools (the episode's sandbox is the boundary) and
GEMINI_CLI_TRUST_WORKSPACE trusts the workspace without asking. Its settings
(`~/.gemini/settings.json`) turn off usage statistics, telemetry, update checks and its
experimental auto memory (a store of its own that would confound the memory ablations). Under
memtool the memory tool is its MCP server `memory` (streamable HTTP, the token as a bearer header).

It loads GEMINI.md as project context by itself, and no other file: under `full` it meets AGENTS.md
only by reading it, unlike Claude Code, Codex, Qwen Code and OpenCode. `agent.context_files`
(e.g. `[GEMINI.md, AGENTS.md]`, its `context.fileName` setting) changes that, for a study of the
CLI as users configure it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from sdebench.agents.installed.base import InstalledAgent
from sdebench.agents.installed.install import InstallSpec
from sdebench.agents.installed.node import node_bin, node_environment, node_package
from sdebench.agents.model import ConfigError
from sdebench.gateway.mcp_memory import SERVER_NAME

MCP_TIMEOUT_MS = 60_000


class GeminiCliAgent(InstalledAgent):
    """Gemini CLI in headless mode."""

    name = "gemini-cli"
    spec = InstallSpec("npm", "@google/gemini-cli", "0.61.0", "node_modules/@google/gemini-cli/bundle/gemini.js",
                       extra=(node_package(),))

    options = ("context_files",)
    memory_tool_format = "mcp_memory_{}"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        files = self.settings.options.get("context_files")
        if files is not None and (not isinstance(files, list | tuple) or not all(isinstance(f, str) and f for f in files)):
            raise ConfigError("agent.context_files must be a list of file names (or null: Gemini CLI's default, GEMINI.md)")
        self.context_files = None if files is None else [str(f) for f in files]
        self.session_id = str(uuid.uuid4())
        self.result: dict[str, Any] = {}

    def environment(self) -> dict[str, str]:
        """Gateway address and token; a trusted workspace; no colour."""
        return {**node_environment(), "GOOGLE_GEMINI_BASE_URL": self.gateway_url, "GEMINI_API_KEY": self.token(),
                "GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"}

    def write_config(self) -> None:
        """`~/.gemini/settings.json`: API-key auth, no statistics, telemetry, updates or auto memory;
        the MCP server under memtool."""
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "experimental": {"autoMemory": False},
        }
        if self.context_files is not None:
            settings["context"] = {"fileName": self.context_files}
        if self.gateway.has_memory:
            settings["mcpServers"] = {SERVER_NAME: {"httpUrl": self.mcp_url(), "trust": True, "timeout": MCP_TIMEOUT_MS,
                                                    "headers": {"Authorization": f"Bearer {self.token()}"}}}
        self.write_home(".gemini/settings.json", json.dumps(settings, indent=2))

    def command(self, prompt: str, resume: bool) -> list[str]:
        """`gemini -p PROMPT` with a fixed session id, or `--resume` of it."""
        assert self.install_dir is not None
        argv = [str(node_bin(self.install_dir)), self.executable, "-p", prompt, "--yolo", "--output-format", "json",
                "-m", self.model.name]
        argv += ["--resume", self.session_id] if resume else ["--session-id", self.session_id]
        return argv + list(self.settings.args)

    def after_run(self, stdout: str, res: Any) -> None:
        """Keep the JSON result it prints (the last JSON object of its output)."""
        text = stdout.strip()
        start = text.rfind("\n{") + 1 if not text.startswith("{") else 0
        try:
            data = json.loads(text[start:]) if text else {}
        except ValueError:
            data = {}
        self.result = data if isinstance(data, dict) else {}

    def run_error(self, stdout: str) -> str | None:
        """Gemini CLI reports an API failure in the `error` field of its result."""
        if not self.result:
            return "gemini-cli printed no JSON result"
        error = self.result.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            return f"gemini-cli reported an error: {str(message)[:300]}"
        return None
