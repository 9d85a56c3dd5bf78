"""aider (PyPI `aider-chat`): `aider --message TASK`, resumed with `--restore-chat-history`.

Installed with pip into `<cache>/aider-chat-<version>/site` (its own pinned dependencies, litellm
included, apart from sdebench's) and run by `aider_driver.py` under the sandbox's python3 (same
minor version as the host's, so the compiled wheels fit). It reaches the gateway as an
OpenAI-compatible server (`openai/<model>` with OPENAI_API_BASE and the episode token as
OPENAI_API_KEY) and edits files with its own edit formats (aider picks one per model; `--edit-format`
in `agent.args` fixes one). Commits, update checks, analytics and the `.gitignore` prompt are off;
its chat and input history live in the agent's HOME, so a resume is the same chat: the next run
restores the history file (`--restore-chat-history`) and adds the feedback as the next message.
aider has no MCP client: under memtool its prompt names the `memory_search` command, and its driver
runs a suggested block of `memory_search` lines (aider runs no other suggested command under
`--yes-always`) and reflects the output to the model.
"""

from __future__ import annotations

import re

from sdebench.agents.installed.base import GATEWAY_DIR, HOME, InstalledAgent
from sdebench.agents.installed.install import InstallSpec

API_ERROR = re.compile(r"^litellm\.\w+(Error|Exception)\b")
DRIVER = "aider_driver.py"
STATE = f"{HOME}/.aider"


class AiderAgent(InstalledAgent):
    """aider in one-shot `--message-file` mode, one run per attempt."""

    name = "aider"
    driver = DRIVER
    spec = InstallSpec("pip", "aider-chat", "0.86.2", "site/aider/__init__.py")
    mcp_client = False  # its memtool prompt names the `memory_search` command

    def environment(self) -> dict[str, str]:
        """Its packages, the gateway as an OpenAI-compatible server, litellm kept offline."""
        assert self.install_dir is not None
        return {"PYTHONPATH": str(self.install_dir / "site"), "OPENAI_API_BASE": f"{self.gateway_url}/v1",
                "OPENAI_API_KEY": self.token(), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "TERM": "dumb"}

    def command(self, prompt: str, resume: bool) -> list[str]:
        """The driver with aider's arguments: the task (or the feedback) in a file of the agent's HOME."""
        name = f".sdebench-prompt-{self.runs + 1}.txt"
        self.write_home(name, prompt)
        argv = ["python3", f"{GATEWAY_DIR}/{DRIVER}", "--state-dir", STATE, "--",
                "--model", f"openai/{self.model.name}", "--message-file", f"{HOME}/{name}",
                "--yes-always", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore", "--no-check-update",
                "--analytics-disable", "--no-show-release-notes", "--no-show-model-warnings", "--no-pretty",
                "--no-fancy-input", "--no-stream", "--chat-history-file", f"{STATE}/chat.history.md",
                "--input-history-file", f"{STATE}/input.history"]
        if resume:
            argv.append("--restore-chat-history")
        return argv + list(self.settings.args)

    def run_error(self, stdout: str) -> str | None:
        """aider prints a failed model call (litellm's exception) and still exits 0."""
        lines = stdout.splitlines()
        for i, line in enumerate(lines):
            if API_ERROR.match(line):
                # the upstream's message may follow on the next lines (the exception's text wraps)
                text = " ".join(x.strip() for x in lines[i:i + 4] if x.strip())
                return f"aider reported an error: {text[:400]}"
        return None
