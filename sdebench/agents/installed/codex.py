"""Codex CLI (`@openai/codex`): `codex exec TASK`, resumed with `codex exec resume THREAD FEEDBACK`.

Its native binary (the npm package's platform build, statically linked) runs directly, so no Node
is needed in the sandbox. It speaks OpenAI Responses (streamed) to a model provider `sdebench` in
`$CODEX_HOME/config.toml` whose key is the episode token; under memtool the memory tool is its MCP
server `memory` (streamable HTTP, bearer token from the environment). Codex's own sandbox is off
(`--dangerously-bypass-approvals-and-sandbox`): the episode's sandbox is the boundary.

What it sees is what the delivery gives it: its memories (a store of its own, `features.memories`)
are pinned off, and its model catalogue is its own bundled one with `supports_search_tool` off for
every model (`model_catalog_json`): for the models that support it (every model it ships, e.g.
gpt-5.5) it otherwise lists MCP tools only as a "deferred tool namespace" behind a hosted
`tool_search`, which no other provider serves, so the model would never see `memory_search`.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from sdebench.agents.installed.base import HOME, InstalledAgent, InstalledAgentError
from sdebench.agents.installed.install import InstallSpec
from sdebench.gateway.mcp_memory import SERVER_NAME

TOKEN_ENV = "SDEBENCH_GATEWAY_TOKEN"
CODEX_HOME = f"{HOME}/.codex"
BUNDLED = ".codex/bundled-models.json"  # its own catalogue, as `codex debug models --bundled` prints it
CATALOG = ".codex/models.json"  # the same without the deferred-tool search


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


class CodexAgent(InstalledAgent):
    """Codex CLI in exec mode."""

    name = "codex"
    spec = InstallSpec("npm", "@openai/codex", "0.171.0", "node_modules/@openai/codex-linux-*/vendor/*/bin/codex")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.thread_id: str | None = None

    def environment(self) -> dict[str, str]:
        """Config dir and the token the provider reads."""
        return {"CODEX_HOME": CODEX_HOME, TOKEN_ENV: self.token(), "RUST_LOG": "error", "NO_COLOR": "1"}

    def write_catalog(self) -> None:
        """Its bundled model catalogue with `supports_search_tool` off, as `model_catalog_json`."""
        assert self.ctx is not None and self.ctx.sandbox is not None
        self.write_home(BUNDLED, "")
        script = f"{shlex.quote(self.executable)} debug models --bundled > {shlex.quote(f'{HOME}/{BUNDLED}')}"
        res = self.ctx.sandbox.exec(["sh", "-c", script], timeout=60, env={"HOME": HOME, "CODEX_HOME": CODEX_HOME})
        try:
            catalog = json.loads((self.host_home / BUNDLED).read_text())
            models = catalog["models"]
            for m in models:
                m["supports_search_tool"] = False
        except (OSError, ValueError, KeyError, TypeError):
            raise InstalledAgentError(f"codex: cannot read its model catalogue (exit {res.exit_code}: "
                                      f"{res.stderr.strip()[-300:]})") from None
        self.write_home(CATALOG, json.dumps(catalog))

    def write_config(self) -> None:
        """config.toml: the gateway as the only model provider, its memories off, its catalogue without
        the deferred-tool search, and the memory MCP server under memtool."""
        self.write_catalog()
        name = self.model.name
        lines = [
            f"model = {_toml_str(name)}",
            'model_provider = "sdebench"',
            'approval_policy = "never"',
            'sandbox_mode = "danger-full-access"',
            f"model_catalog_json = {_toml_str(f'{HOME}/{CATALOG}')}",
            "",
            "[features]",
            "memories = false",
            "",
            "[model_providers.sdebench]",
            'name = "sdebench gateway"',
            f"base_url = {_toml_str(self.gateway_url + '/v1')}",
            f"env_key = {_toml_str(TOKEN_ENV)}",
            'wire_api = "responses"',
            "request_max_retries = 2",
            "stream_max_retries = 2",
        ]
        if self.gateway.has_memory:
            lines += ["", f"[mcp_servers.{SERVER_NAME}]", f"url = {_toml_str(self.mcp_url())}",
                      f"bearer_token_env_var = {_toml_str(TOKEN_ENV)}"]
        self.write_home(".codex/config.toml", "\n".join(lines) + "\n")

    def command(self, prompt: str, resume: bool) -> list[str]:
        """`codex exec --json PROMPT`, or `codex exec resume THREAD PROMPT`."""
        common = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", *self.settings.args]
        if resume and self.thread_id:
            return [self.executable, "exec", "resume", *common, self.thread_id, prompt]
        if resume:
            return [self.executable, "exec", "resume", *common, "--last", prompt]
        return [self.executable, "exec", *common, "-m", self.model.name, prompt]

    def after_run(self, stdout: str, res: Any) -> None:
        """The thread id from the `thread.started` event of the JSON event stream."""
        for line in stdout.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict) and ev.get("type") == "thread.started" and ev.get("thread_id"):
                self.thread_id = str(ev["thread_id"])
                return

    def run_error(self, stdout: str) -> str | None:
        """A turn that failed (the stream's `turn.failed` or `error` event)."""
        for line in stdout.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict) and ev.get("type") in ("turn.failed", "error"):
                msg = ev.get("error", {}).get("message") if isinstance(ev.get("error"), dict) else ev.get("message")
                return f"codex reported an error: {str(msg)[:300]}"
        return None
