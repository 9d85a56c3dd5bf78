"""Installing an agent CLI once, at a pinned version, into a shared cache dir.

The cache is outside any home dir (the local sandbox masks homes): `$SDEBENCH_AGENT_CACHE`, else
`/var/tmp/sdebench-agents`. Each install is `<cache>/<name>-<version>/`, built in a temporary
sibling and renamed into place when complete, under a file lock, so concurrent episodes install it
once and nobody ever runs a half-written install.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sdebench.errors import AgentError

CACHE_ENV = "SDEBENCH_AGENT_CACHE"
DEFAULT_CACHE = "/var/tmp/sdebench-agents"
INSTALL_TIMEOUT_S = 1800


class InstallError(AgentError, RuntimeError):
    """An agent could not be installed (registry unreachable, unknown version...)."""


@dataclass(frozen=True)
class InstallSpec:
    """What to install: an npm or PyPI package at a version, and where its executable lands."""

    kind: str  # npm | pip
    package: str
    version: str
    bin: str  # executable relative to the install dir; may be a glob (platform dirs)
    extra: tuple[str, ...] = ()  # more pinned packages installed alongside ("name@version"), e.g. a Node runtime

    @property
    def key(self) -> str:
        """The install dir's name (the extras' pins included, so a changed pin is a new install)."""
        return "+".join(_slug(p) for p in (f"{self.package}-{self.version}", *self.extra))


def _slug(pin: str) -> str:
    return pin.strip("@").replace("/", "-").replace("@", "-").replace("==", "-")


def cache_root(configured: str | None = None) -> Path:
    """The cache dir: configured, else $SDEBENCH_AGENT_CACHE, else /var/tmp/sdebench-agents."""
    root = Path(configured or os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser().resolve()
    if str(root).startswith(str(Path.home().resolve()) + os.sep) or str(root).startswith("/home/"):
        raise InstallError(f"the agent cache {root} is under a home dir, which the sandbox hides; "
                           f"set {CACHE_ENV} or agent.cache_dir elsewhere")
    return root


def find_bin(prefix: Path, pattern: str) -> Path | None:
    """The executable of an install (the first glob match), or None."""
    hits = sorted(glob.glob(str(prefix / pattern)))
    return Path(hits[0]) if hits else None


def run_install(argv: list[str], cwd: Path | None = None) -> None:
    """Run one install command; InstallError (one line, with its output's tail) if it fails."""
    try:
        r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                           env={**os.environ, "npm_config_update_notifier": "false", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    except FileNotFoundError:
        raise InstallError(f"`{argv[0]}` is not installed") from None
    except subprocess.TimeoutExpired:
        raise InstallError(f"`{' '.join(argv[:4])} ...` did not finish within {INSTALL_TIMEOUT_S} s") from None
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise InstallError(f"`{' '.join(argv[:5])} ...` failed ({r.returncode}): {' | '.join(tail)[:500]}")


def _install_into(spec: InstallSpec, dest: Path) -> None:
    if spec.kind == "npm":
        run_install(["npm", "install", "--prefix", str(dest), "--no-audit", "--no-fund", "--loglevel=error",
              f"{spec.package}@{spec.version}", *spec.extra])
    elif spec.kind == "pip":
        run_install([sys.executable, "-m", "pip", "install", "--quiet", "--no-warn-script-location", "--target",
              str(dest / "site"), f"{spec.package}=={spec.version}", *spec.extra])
    else:
        raise InstallError(f"unknown install kind {spec.kind!r} (npm or pip)")


def ensure_installed(spec: InstallSpec, root: Path) -> Path:
    """The install dir of `spec` under `root`, installing it first if needed."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    final = root / spec.key
    if find_bin(final, spec.bin) is not None and (final / ".complete").exists():
        return final
    with open(root / f".{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if find_bin(final, spec.bin) is not None and (final / ".complete").exists():
                return final
            tmp = Path(tempfile.mkdtemp(prefix=f".{spec.key}-", dir=root))
            try:
                _install_into(spec, tmp)
                if find_bin(tmp, spec.bin) is None:
                    raise InstallError(f"{spec.package}@{spec.version} installed, but {spec.bin} is not in it")
                (tmp / ".complete").write_text(f"{spec.kind} {spec.package} {spec.version}\n")
                os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the docker sandbox user must read it
                if final.exists():
                    shutil.rmtree(final)
                tmp.rename(final)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    shutil.rmtree(tmp)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return final
