"""Qwen Code (`@qwen-code/qwen-code`): `qwen TASK`, resumed with `qwen FEEDBACK --resume ID`.

It runs on the pinned Node installed beside it (`node.py`) and speaks OpenAI Chat Completions to
OPENAI_BASE_URL (`--auth-type openai`) with the episode token as its key. The session id is chosen
up front (`--session-id`), so the resume needs nothing parsed from its output; `--yolo` approves
its tools (the episode's sandbox is the boundary). Its settings (`~/.qwen/settings.json`) turn off
what would add model calls or memory of its own: managed auto-memory and its consolidation (a
background extraction call after each turn, and a memory store that would confound the memory
ablations), usage statistics, telemetry and update checks. Under memtool the memory tool is its MCP
server `memory` (streamable HTTP, the token as a bearer header), with `alwaysLoadTools`: by default
it lists MCP tools only behind its `tool_search`/`tool_call` bridge, so a model that never searches
never sees `memory_search`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from sdebench.agents.installed.base import InstalledAgent
from sdebench.agents.installed.install import InstallSpec
from sdebench.agents.installed.node import node_bin, node_environment, node_package
from sdebench.gateway.mcp_memory import SERVER_NAME

MCP_TIMEOUT_MS = 60_000


def json_events(stdout: str) -> list[dict[str, Any]]:
    """The events of `--output-format json` (one JSON array), or of JSON lines; [] if neither."""
    text = stdout.strip()
    try:
        data = json.loads(text) if text else []
    except ValueError:
        data = []
        for line in text.splitlines():
            try:
                data.append(json.loads(line))
            except ValueError:
                continue
    if isinstance(data, dict):
        data = [data]
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


class QwenCodeAgent(InstalledAgent):
    """Qwen Code in headless mode."""

    name = "qwen-code"
    spec = InstallSpec("npm", "@qwen-code/qwen-code", "0.24.4", "node_modules/@qwen-code/qwen-code/cli.js",
                       extra=(node_package(),))

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.session_id = str(uuid.uuid4())
        self.result: dict[str, Any] = {}

    def environment(self) -> dict[str, str]:
        """Gateway address, token and model; no nags."""
        return {**node_environment(), "OPENAI_BASE_URL": f"{self.gateway_url}/v1", "OPENAI_API_KEY": self.token(),
                "OPENAI_MODEL": self.model.name, "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1", "NO_COLOR": "1"}

    def write_config(self) -> None:
        """`~/.qwen/settings.json`: no background memory, statistics or updates; the MCP server under memtool."""
        settings: dict[str, Any] = {
            "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False, "enableAutoSkill": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False},
        }
        if self.gateway.has_memory:
            # discovery of a remote server times out after 5 s by default, which a loaded machine exceeds
            settings["mcpServers"] = {SERVER_NAME: {"httpUrl": self.mcp_url(), "trust": True, "alwaysLoadTools": True,
                                                    "discoveryTimeoutMs": MCP_TIMEOUT_MS, "timeout": MCP_TIMEOUT_MS,
                                                    "headers": {"Authorization": f"Bearer {self.token()}"}}}
        self.write_home(".qwen/settings.json", json.dumps(settings, indent=2))

    def command(self, prompt: str, resume: bool) -> list[str]:
        """`qwen PROMPT` with a fixed session id, or `--resume` of it."""
        assert self.install_dir is not None
        argv = [str(node_bin(self.install_dir)), self.executable, prompt, "--auth-type", "openai", "--yolo",
                "--output-format", "json", "-m", self.model.name]
        argv += ["--resume", self.session_id] if resume else ["--session-id", self.session_id]
        return argv + list(self.settings.args)

    def after_run(self, stdout: str, res: Any) -> None:
        """Keep the `result` event of the JSON output."""
        results = [e for e in json_events(stdout) if e.get("type") == "result"]
        self.result = results[-1] if results else {}
        if self.result.get("session_id"):
            self.session_id = str(self.result["session_id"])

    def run_error(self, stdout: str) -> str | None:
        """Qwen Code reports an API failure in its result event."""
        if not self.result:
            return "qwen-code printed no result event"
        if self.result.get("is_error"):
            return f"qwen-code reported an error: {str(self.result.get('result') or self.result.get('error'))[:300]}"
        return None
