"""The sandbox protocol: where every command of an episode or a grade runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from sdebench.errors import SandboxError  # noqa: F401 - re-exported: the sandbox layer's error, defined with the others

# Output kept per stream: the head and the tail, with a marker in between.
DEFAULT_OUTPUT_CAP = 64_000
TRUNCATION_MARKER = "\n[... {n} bytes truncated ...]\n"
# The one workspace dir commands may write in when a sandbox is opened read-only (grading), and
# where the host's files for them appear (a grading runner's gate).
OUT_DIR = ".sdebench-out"
# Where every backend shows the workspace to commands: the same neutral path in every episode,
# so nothing in the working directory names the task.
WORKDIR = "/repo"
# How often a running command's watch is polled.
WATCH_POLL_S = 0.01


@dataclass(frozen=True)
class Mount:
    """A host path bound into a sandbox at `target` (e.g. an installed agent and its gateway socket)."""

    source: str
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class ExecResult:
    """What one command did."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    stopped: bool = False  # killed because its watch expired


@runtime_checkable
class Watch(Protocol):
    """Supervises one running command from the host: sees its stdout as it arrives, may stop it.

    `feed` gets stdout bytes in order (from the backend's reader); `expired` is polled about every
    WATCH_POLL_S seconds and a True stops the command at once (the whole process tree, not a
    signal the command could catch or block).
    """

    def feed(self, chunk: bytes) -> None: ...

    def expired(self) -> bool: ...


@runtime_checkable
class Sandbox(Protocol):
    """An open sandbox on one workspace; commands run with the workspace as cwd."""

    workdir: str  # the workspace path as commands inside the sandbox see it

    def exec(
        self, cmd: str | list[str], timeout: float = 60.0, env: dict[str, str] | None = None, watch: Watch | None = None
    ) -> ExecResult:
        """Run `cmd` (a shell string or an argv list) in the workspace, under `watch` if given."""
        ...

    def read_file(self, rel: str) -> str:
        """Read a workspace file."""
        ...

    def write_file(self, rel: str, content: str) -> None:
        """Write a workspace file (parents created)."""
        ...

    def sync_out(self, dest: Path) -> None:
        """Copy the workspace's current files into the host dir `dest` (for grading)."""
        ...

    def close(self) -> None:
        """Release everything the sandbox holds; safe to call twice."""
        ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc) -> None: ...


class SandboxFactory(Protocol):
    """Opens sandboxes of one backend; built from the `sandbox` config group."""

    name: str

    def open(self, workspace: Path, read_only: bool = False, mounts: tuple[Mount, ...] = (),
             address_space_mb: int | None = None) -> Sandbox:
        """Open a sandbox on the host dir `workspace`; with `read_only`, commands may write only
        below OUT_DIR of the workspace (the host side still writes anywhere in it, and sees what
        commands write there); `mounts` are
        bound into every command's view (backends without isolation see host paths anyway);
        `address_space_mb` raises (never lowers) a per-process address-space cap where the
        backend has one (an agent runtime that reserves more virtual memory than it uses)."""
        ...

    def cleanup(self) -> None:
        """Remove anything left behind by this backend (called at sweep end)."""
        ...


def cap_output(data: bytes, cap: int = DEFAULT_OUTPUT_CAP) -> tuple[str, bool]:
    """Decode `data`, keeping the head and tail when it exceeds `cap` bytes."""
    if len(data) <= cap:
        return data.decode(errors="replace"), False
    half = cap // 2
    cut = len(data) - 2 * half
    text = data[:half].decode(errors="replace") + TRUNCATION_MARKER.format(n=cut) + data[-half:].decode(errors="replace")
    return text, True
