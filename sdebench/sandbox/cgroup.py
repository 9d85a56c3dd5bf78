"""Per-sandbox control groups: a hard memory limit and a process-count limit.

RLIMIT_NPROC does not bind root (the kernel exempts uid 0), so the process-count limit of a
sandbox opened by root needs a cgroup. Both cgroup v1 (separate `memory` and `pids` hierarchies)
and v2 (one unified tree) are handled; when neither is writable, `create` returns None and the
caller falls back to rlimits.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "sdebench-"
V2_PARENT = "sdebench"


@dataclass(frozen=True)
class Cgroup:
    """One created cgroup: the dirs it spans (one per v1 hierarchy, or one v2 dir)."""

    dirs: tuple[Path, ...]

    @property
    def procs_files(self) -> list[str]:
        """The `cgroup.procs` files a process writes its pid into to join."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> set[int]:
        """Pids currently in the cgroup."""
        out: set[int] = set()
        for f in self.procs_files:
            with contextlib.suppress(OSError):
                out.update(int(x) for x in Path(f).read_text().split())
        return out

    def kill_all(self) -> None:
        """SIGKILL every process left in the cgroup."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def drain(self, wait_s: float = 2.0) -> bool:
        """Kill every process in the cgroup and wait until it is empty; False if it never empties."""
        deadline = time.monotonic() + wait_s
        while True:
            self.kill_all()
            if not self.pids():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)

    def remove(self, wait_s: float = 2.0) -> None:
        """Kill what is left and remove the dirs (retrying while killed processes exit)."""
        deadline = time.monotonic() + wait_s
        for d in self.dirs:
            while d.exists():
                self.kill_all()
                try:
                    d.rmdir()
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _v2_root() -> Path | None:
    if (ROOT / "cgroup.controllers").is_file():
        return ROOT
    return None


def _create_v1(name: str, memory_bytes: int | None, pids_max: int | None) -> Cgroup | None:
    made: list[Path] = []
    try:
        if pids_max is not None:
            d = ROOT / "pids" / name
            d.mkdir()
            made.append(d)
            _write(d / "pids.max", str(pids_max))
        if memory_bytes is not None:
            d = ROOT / "memory" / name
            d.mkdir()
            made.append(d)
            _write(d / "memory.limit_in_bytes", str(memory_bytes))
            swap = d / "memory.memsw.limit_in_bytes"
            if swap.exists():
                _write(swap, str(memory_bytes))
        return Cgroup(tuple(made))
    except OSError:
        Cgroup(tuple(made)).remove()
        return None


def _create_v2(root: Path, name: str, memory_bytes: int | None, pids_max: int | None) -> Cgroup | None:
    parent = root / V2_PARENT
    d = parent / name
    try:
        wanted = [c for c, v in (("memory", memory_bytes), ("pids", pids_max)) if v is not None]
        available = (root / "cgroup.controllers").read_text().split()
        if any(c not in available for c in wanted):
            return None
        control = " ".join("+" + c for c in wanted)
        _write(root / "cgroup.subtree_control", control)
        parent.mkdir(exist_ok=True)
        _write(parent / "cgroup.subtree_control", control)
        d.mkdir()
        if pids_max is not None:
            _write(d / "pids.max", str(pids_max))
        if memory_bytes is not None:
            _write(d / "memory.max", str(memory_bytes))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
        return Cgroup((d,))
    except OSError:
        Cgroup((d,)).remove()
        return None


def create(memory_bytes: int | None, pids_max: int | None) -> Cgroup | None:
    """Create a fresh cgroup with the given limits; None when cgroups are not writable here."""
    if memory_bytes is None and pids_max is None:
        return None
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    root = _v2_root()
    if root is not None:
        return _create_v2(root, name, memory_bytes, pids_max)
    if (ROOT / "pids").is_dir() or (ROOT / "memory").is_dir():
        return _create_v1(name, memory_bytes, pids_max)
    return None


def prune() -> int:
    """Remove leftover sdebench cgroups of processes that no longer run; return how many."""
    removed = 0
    parents = [ROOT / V2_PARENT] if _v2_root() else [ROOT / "pids", ROOT / "memory"]
    for parent in parents:
        if not parent.is_dir():
            continue
        for d in parent.glob(PREFIX + "*"):
            owner = d.name[len(PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and Path(f"/proc/{owner}").exists():
                continue  # its opener still runs: it removes its own
            Cgroup((d,)).remove(wait_s=0.5)
            removed += not d.exists()
    return removed
