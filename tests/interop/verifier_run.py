"""Run an exported verifier (tests/test.sh) on the host as its harness would: a fresh copy of its
tests/ dir per run (the verifier removes its answer key), as root.

The interpreter here may live under a dir other users cannot enter (/root/.pyenv): then the run
is wrapped in bubblewrap with that dir replaced by an empty one and the interpreter's trees (a
virtualenv's and its base install's) bound back, so the unprivileged users the verifier starts can run it, as in a container.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


def _interpreter_roots() -> list[Path]:
    """The trees the interpreter runs from: the venv (if any), its base install, the real binary's dir."""
    roots = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent]
    return list(dict.fromkeys(roots))


def _hidden_ancestor(p: Path) -> Path | None:
    """The first ancestor of `p` that other users cannot enter, if any."""
    for parent in reversed(p.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def out_of_reach() -> bool:
    """Whether some tree of the interpreter lies under a dir other users cannot enter."""
    return any(_hidden_ancestor(root) is not None for root in _interpreter_roots())


def _mend() -> list[str]:
    """bubblewrap options that let any user reach the interpreter: each dir out of reach replaced by an
    empty one, with the interpreter's trees under it bound back (a venv under /root and its pyenv base)."""
    hidden: dict[Path, set[Path]] = {}
    for root in _interpreter_roots():
        top = _hidden_ancestor(root)
        if top is not None:
            hidden.setdefault(top, set()).add(top / root.relative_to(top).parts[0])
    opts: list[str] = []
    for top in sorted(hidden):
        opts += ["--tmpfs", str(top)]
        for keep in sorted(hidden[top]):
            opts += ["--ro-bind", str(keep), str(keep)]
    return opts


def argv(script: Path, extra: list[str] | None = None, reachable: bool = True) -> list[str]:
    """The command running `script` with bash; in bubblewrap when `extra` bubblewrap options are given or
    (`reachable`) the interpreter is out of other users' reach, which the wrapper then mends."""
    mend = _mend() if reachable else []
    if not mend and not extra:
        return ["bash", str(script)]
    return ["bwrap", "--dev-bind", "/", "/", *mend, *(extra or []), "--", "bash", str(script)]


@dataclass(frozen=True)
class Run:
    """What one verifier run left: its reward, details, output, and the files still in its tests/ dir."""

    reward: str
    details: dict
    out: str
    left: list[str]


def run(tests: Path, app: Path, logs: Path, *, not_root: bool = False, ro_tests: bool = False,
        reachable: bool = True, timeout: float = 300) -> Run:
    """Run a fresh copy of `tests` (its test.sh) on `app` as root, the copy in a dir any user may enter
    (as /tests is in a container).

    `not_root`: the verifier runs as an ordinary user (root mapped to uid 1000 in a user namespace:
    it can no longer switch users); `ro_tests`: its tests/ dir is read-only (it cannot remove the key);
    `reachable=False`: the interpreter is left where it is, even out of other users' reach."""
    base = Path(tempfile.mkdtemp(prefix="sdebench-verify-", dir="/tmp"))
    try:
        base.chmod(0o755)
        fresh = base / "tests"
        shutil.copytree(tests, fresh)
        logs.mkdir(parents=True, exist_ok=True)
        extra = (["--unshare-user", "--uid", "1000", "--gid", "1000"] if not_root else []) + (
            ["--ro-bind", str(fresh), str(fresh)] if ro_tests else [])
        env = {**os.environ, "SDEBENCH_APP": str(app), "SDEBENCH_LOG_DIR": str(logs)}
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        p = subprocess.run(argv(fresh / "test.sh", extra, reachable), env=env, capture_output=True, text=True,
                           timeout=timeout)
        assert p.returncode == 0, p.stderr
        left = sorted(x.name for x in fresh.iterdir())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    reward = str(json.loads((logs / "reward.json").read_text())["reward"])
    details = json.loads((logs / "details.json").read_text()) if (logs / "details.json").is_file() else {}
    return Run(reward, details, p.stdout, left)
