"""mini-swe-agent (PyPI `mini-swe-agent`): its own loop, bash tool and `mini.yaml` config, run in the sandbox.

Installed with pip into `<cache>/mini-swe-agent-<version>/site` and run by `mini_driver.py` under the
sandbox's python3 (same minor version as the host's, so the compiled wheels fit). It calls the
gateway in OpenAI Chat Completions through its own litellm; a resume continues its saved message
history with the feedback as the next user message. It has no MCP client: under memtool its
prompt names the `memory_search` command its bash tool can run (the same search as the tool).
"""

from __future__ import annotations

from typing import Any

from sdebench.agents.installed.base import GATEWAY_DIR, HOME, InstalledAgent
from sdebench.agents.installed.install import InstallSpec

DRIVER = "mini_driver.py"
STATE = ".sdebench-mini-trajectory.json"


class MiniSweAgent(InstalledAgent):
    """mini-swe-agent's DefaultAgent with its LocalEnvironment (the sandbox is the environment)."""

    name = "mini-swe-agent"
    driver = DRIVER
    spec = InstallSpec("pip", "mini-swe-agent", "2.4.6", "site/minisweagent/__init__.py")
    options = ("config",)
    mcp_client = False  # its memtool prompt names the `memory_search` command

    def environment(self) -> dict[str, str]:
        """Its packages, the token, and litellm kept offline."""
        assert self.install_dir is not None
        return {"PYTHONPATH": str(self.install_dir / "site"), "SDEBENCH_GATEWAY_TOKEN": self.token(),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MSWEA_COST_TRACKING": "ignore_errors",
                "MSWEA_SILENT_STARTUP": "1", "MSWEA_CONFIGURED": "true", "PYTHONDONTWRITEBYTECODE": "1"}

    def command(self, prompt: str, resume: bool) -> list[str]:
        """The driver with the task (or the feedback) in a file of the agent's HOME."""
        name = f".sdebench-prompt-{self.runs + 1}.txt"
        self.write_home(name, prompt)
        argv = ["python3", f"{GATEWAY_DIR}/{DRIVER}", "--state", f"{HOME}/{STATE}", "--model", self.model.name,
                "--api-base", f"{self.gateway_url}/v1", "--config", str(self.settings.options.get("config") or "mini.yaml")]
        argv += ["--feedback-file" if resume else "--task-file", f"{HOME}/{name}"]
        return argv + list(self.settings.args)

    def after_run(self, stdout: str, res: Any) -> None:
        """Nothing to keep: the history is in the state file."""
