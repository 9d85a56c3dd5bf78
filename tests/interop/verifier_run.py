"""Run an exported verifier (tests/test.sh) on the host as its harness would: a fresh copy of its
tests/ dir per run (the verifier removes its answer key), as root or as another user.

The interpreter here may live under a dir other users cannot enter (/root/.pyenv): then the run
is wrapped in bubblewrap with that dir's parent replaced by an empty one and the interpreter's
tree bound back, so the unprivileged users the verifier starts can run it, as in a container.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _hidden_prefix() -> Path | None:
    """The first ancestor of the interpreter's prefix that other users cannot enter, if any."""
    p = Path(sys.prefix).resolve()
    for parent in reversed(p.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def argv(script: Path) -> list[str]:
    """The command running `script` with bash, wrapped when the interpreter is out of other users' reach."""
    hidden = _hidden_prefix()
    if hidden is None:
        return ["bash", str(script)]
    inner = Path(sys.prefix).resolve()
    keep = hidden / inner.relative_to(hidden).parts[0]
    return ["bwrap", "--dev-bind", "/", "/", "--tmpfs", str(hidden), "--ro-bind", str(keep), str(keep),
            "--", "bash", str(script)]


def run(tests: Path, app: Path, logs: Path, user: int | None = None, env: dict | None = None,
        timeout: float = 300) -> tuple[str, dict, str]:
    """Run a fresh copy of `tests` (its test.sh) on `app`; reward, details and stdout."""
    fresh = logs.parent / f"tests-{logs.name}"
    shutil.copytree(tests, fresh)
    logs.mkdir(parents=True, exist_ok=True)
    demote = None
    if user is not None:
        for p in (fresh, logs, *fresh.rglob("*")):
            os.chown(p, user, user)

        def demote():
            os.setgroups([])
            os.setgid(user)
            os.setuid(user)
    full = {**os.environ, "SDEBENCH_APP": str(app), "SDEBENCH_LOG_DIR": str(logs), **(env or {})}
    full["PATH"] = f"{Path(sys.executable).parent}:{full.get('PATH', '')}"
    p = subprocess.run(argv(fresh / "test.sh"), env=full, capture_output=True, text=True, timeout=timeout,
                       preexec_fn=demote)
    assert p.returncode == 0, p.stderr
    reward = str(json.loads((logs / "reward.json").read_text())["reward"])
    details = json.loads((logs / "details.json").read_text()) if (logs / "details.json").is_file() else {}
    return reward, details, p.stdout
