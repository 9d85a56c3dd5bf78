"""OpenCode (`opencode-ai`): `opencode run TASK`, resumed with `opencode run --session ID FEEDBACK`.

Its native binary (the npm package's platform build) runs directly, so no Node is needed in the
sandbox. It speaks OpenAI Chat Completions to a provider `sdebench` declared in
`~/.config/opencode/opencode.json` (the `@ai-sdk/openai-compatible` provider built into the
binary, so nothing is fetched) whose key is the episode token; the model catalogue fetch, update
checks and sharing are off. Each run is given a title (`--title`), so OpenCode makes no extra model
call to name the session. Its tools are allowed without asking (`permission` and `--auto`): the
episode's sandbox is the boundary. The session id comes from its JSON event stream. Under memtool
the memory tool is its remote MCP server `memory` (the token as a bearer header).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sdebench.agents.installed.base import InstalledAgent
from sdebench.agents.installed.install import InstallSpec
from sdebench.gateway.mcp_memory import SERVER_NAME

PROVIDER = "sdebench"
TOKEN_ENV = "SDEBENCH_GATEWAY_TOKEN"
TITLE = "sdebench episode"
MCP_TIMEOUT_MS = 60_000


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON events of `--format json`, one a line (other lines skipped)."""
    out = []
    for line in stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


class OpenCodeAgent(InstalledAgent):
    """OpenCode in `run` mode."""

    name = "opencode"
    spec = InstallSpec("npm", "opencode-ai", "1.18.33", "node_modules/opencode-linux-*/bin/opencode")
    # Bun (its runtime) reserves ~130 GiB of address space it never touches; under the local
    # sandbox's 4 GiB RLIMIT_AS it crashes now and then ("Illegal instruction", or "Out of
    # memory" spawning a shell). Memory itself stays bounded by the sandbox's cgroup.
    capabilities = replace(InstalledAgent.capabilities, address_space_mb=256 * 1024)
    memory_tool_format = f"{SERVER_NAME}_{{}}"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.session_id: str | None = None
        self.events: list[dict[str, Any]] = []

    def environment(self) -> dict[str, str]:
        """The token the provider reads; nothing fetched, nothing shared."""
        return {TOKEN_ENV: self.token(), "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1", "NO_COLOR": "1"}

    def write_config(self) -> None:
        """`~/.config/opencode/opencode.json`: the gateway as provider, tools allowed, the MCP server under memtool."""
        model = self.model.name
        cfg: dict[str, Any] = {
            "provider": {PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": PROVIDER,
                                    "options": {"baseURL": f"{self.gateway_url}/v1", "apiKey": f"{{env:{TOKEN_ENV}}}"},
                                    "models": {model: {"name": model}}}},
            "model": f"{PROVIDER}/{model}",
            "small_model": f"{PROVIDER}/{model}",
            "autoupdate": False,
            "share": "disabled",
            "snapshot": False,  # its own git snapshots of the worktree (for undo): time and memory an episode does not need
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
        }
        if self.gateway.has_memory:
            cfg["mcp"] = {SERVER_NAME: {"type": "remote", "url": self.mcp_url(), "enabled": True, "timeout": MCP_TIMEOUT_MS,
                                        "headers": {"Authorization": f"Bearer {self.token()}"}}}
        self.write_home(".config/opencode/opencode.json", json.dumps(cfg, indent=2))

    def command(self, prompt: str, resume: bool) -> list[str]:
        """`opencode run PROMPT`, or `--session` of the first run's session."""
        argv = [self.executable, "run", "--format", "json", "--auto", "-m", f"{PROVIDER}/{self.model.name}"]
        argv += ["--session", self.session_id] if resume and self.session_id else ["--title", TITLE]
        return [*argv, *self.settings.args, "--", prompt]

    def after_run(self, stdout: str, res: Any) -> None:
        """Keep the events; the session id from the first that names one."""
        self.events = json_lines(stdout)
        for ev in self.events:
            if ev.get("sessionID"):
                self.session_id = str(ev["sessionID"])
                return

    def run_error(self, stdout: str) -> str | None:
        """An `error` event of the stream, or a run that produced no step at all."""
        for ev in self.events:
            if ev.get("type") == "error":
                err = ev.get("error")
                msg = (err.get("data", {}).get("message") or err.get("name")) if isinstance(err, dict) else err
                return f"opencode reported an error: {str(msg or ev)[:300]}"
        if not any(ev.get("type") == "step_finish" for ev in self.events):
            return "opencode finished no step"
        return None
