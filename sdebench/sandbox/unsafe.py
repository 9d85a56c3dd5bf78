"""`sandbox=unsafe_local`: plain host subprocesses, no isolation. Only when the user picks it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from sdebench.sandbox.base import DEFAULT_OUTPUT_CAP, ExecResult, Watch
from sdebench.sandbox.process import run_process

# Variables kept from the host environment; everything else (keys, tokens) stays out.
PASS_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM")


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a sandboxed command sees: a few host basics, no secrets, no autoloaded plugins."""
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    env.update(
        {
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTHONHASHSEED": "0",
            "PIP_NO_INPUT": "1",
        }
    )
    if extra:
        env.update(extra)
    return env


class UnsafeLocalSandbox:
    """Commands run directly on the host in the workspace dir."""

    def __init__(self, workspace: Path, output_cap: int = DEFAULT_OUTPUT_CAP):
        self.workspace = Path(workspace).resolve()
        self.workdir = str(self.workspace)
        self.host_workspace = self.workspace  # the files live on the host: graded in place
        self.output_cap = output_cap

    def exec(
        self, cmd: str | list[str], timeout: float = 60.0, env: dict[str, str] | None = None, watch: Watch | None = None
    ) -> ExecResult:
        """Run `cmd` in the workspace on the host (stopped when `watch` expires)."""
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return run_process(argv, self.workdir, timeout, base_env(env), self.output_cap, watch=watch)

    def read_file(self, rel: str) -> str:
        """Read a workspace file."""
        return (self.workspace / rel).read_text(errors="replace")

    def write_file(self, rel: str, content: str) -> None:
        """Write a workspace file."""
        p = self.workspace / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)

    def sync_out(self, dest: Path) -> None:
        """Copy the workspace to `dest`."""
        if Path(dest).resolve() != self.workspace:
            shutil.copytree(self.workspace, dest, symlinks=True, dirs_exist_ok=True)

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class UnsafeLocalFactory:
    """Opens unsafe local sandboxes."""

    output_cap: int = DEFAULT_OUTPUT_CAP
    name: str = "unsafe_local"

    def open(self, workspace: Path, read_only: bool = False, mounts: tuple = (),
             address_space_mb: int | None = None) -> UnsafeLocalSandbox:
        """Open on `workspace`; `read_only`, `mounts` and limits mean nothing without a sandbox and are ignored."""
        return UnsafeLocalSandbox(workspace, self.output_cap)

    def cleanup(self) -> None:
        """Nothing to clean."""
