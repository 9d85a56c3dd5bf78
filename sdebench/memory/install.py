"""Installing the memory systems, pinned, into the shared install cache (beside the agent CLIs).

    python -m sdebench.memory.install [kg basic-memory mem0 | all]

Each system is one `InstallSpec` (sdebench.agents.installed.install): an npm package with its
executable, a PyPI package installed with its dependencies into its own dir, or (kind `venv`) a
PyPI package that needs a newer Python than the host's, installed into its own virtualenv made
with a Python of at least `VENV_PYTHON` (found on PATH or under pyenv). Nothing here downloads a
model; the systems that embed text are configured to use the project's model gateway, or have
their semantic search turned off.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import os
import shutil
import sys
from pathlib import Path

from sdebench.agents.installed.install import (
    InstallError,
    InstallSpec,
    cache_root,
    ensure_installed,
    find_bin,
    run_install,
)

VENV = "venv"  # the install kind of a package that gets its own virtualenv
VENV_PYTHON = (3, 12)  # the oldest Python a `venv` install is made with
PYTHON_ENV = "SDEBENCH_MEMORY_PYTHON"  # an interpreter to make those virtualenvs with, if set

SYSTEMS: dict[str, InstallSpec] = {
    # The reference MCP knowledge-graph memory server (entities, relations, observations in a JSONL file).
    "kg": InstallSpec("npm", "@modelcontextprotocol/server-memory", "2026.8.31",
                      "node_modules/@modelcontextprotocol/server-memory/dist/index.js"),
    # mem0 (an LLM-curated memory) with its default vector store's client, whose local mode keeps the
    # vectors in files (no server, nothing downloaded), and the MCP SDK its driver serves the tools with
    # (sdebench/memory/mem0_server.py runs with this dir alone on its path). Its other dependencies are
    # what pip resolves for these pins.
    "mem0": InstallSpec(
        "pip", "mem0ai", "2.2.1", "site/mem0/memory/main.py", extra=("qdrant-client==1.20.0", "mcp==2.3.0")
    ),
    # A local-first notes vault: markdown files indexed (SQLite FTS5) by its own MCP server. It needs
    # Python >= 3.12, hence a virtualenv. 0.23.2 is the newest release whose semantic (fastembed) search
    # can be turned off by its config (0.24 always embeds, which downloads a model); mcp pinned as tested.
    "basic-memory": InstallSpec(VENV, "basic-memory", "0.23.2", "venv/bin/basic-memory", ("mcp==2.3.0",)),
}


def _spec(name: str) -> InstallSpec:
    spec = SYSTEMS.get(name)
    if spec is None:
        raise InstallError(f"unknown memory system {name!r} (installable: {', '.join(SYSTEMS)})")
    return spec


def installed(name: str, cache_dir: str | None = None) -> Path:
    """The install dir of memory system `name`, installing it first if needed; InstallError if it cannot be."""
    spec = _spec(name)
    if spec.kind == VENV:
        return ensure_venv(spec, cache_root(cache_dir))
    return ensure_installed(spec, cache_root(cache_dir))


def find_installed(name: str, cache_dir: str | None = None) -> Path | None:
    """The executable of memory system `name` if it is fully installed, else None (installs nothing)."""
    spec = _spec(name)
    final = cache_root(cache_dir) / spec.key
    path = find_bin(final, spec.bin)
    return path if path is not None and (final / ".complete").exists() else None


def venv_python() -> str:
    """An interpreter of at least VENV_PYTHON: $SDEBENCH_MEMORY_PYTHON, this one, pyenv's newest, or on PATH."""
    if os.environ.get(PYTHON_ENV):
        return os.environ[PYTHON_ENV]
    if sys.version_info[:2] >= VENV_PYTHON:
        return sys.executable
    want = "python{}.{}".format(*VENV_PYTHON)
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    # pyenv's own builds first: a PATH shim may resolve to another version depending on the cwd
    found = sorted(
        glob.glob(str(pyenv / "versions" / "{}.{}.*".format(*VENV_PYTHON) / "bin" / want)),
        key=lambda p: [int(x) for x in Path(p).parents[1].name.split(".") if x.isdigit()],
    )
    if found:
        return found[-1]
    on_path = shutil.which(want)
    if on_path:
        return on_path
    raise InstallError(f"no Python {'.'.join(map(str, VENV_PYTHON))} found (set {PYTHON_ENV} to one)")


def ensure_venv(spec: InstallSpec, root: Path) -> Path:
    """The install dir of a `venv` spec under `root`, making its virtualenv and installing into it if needed."""
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
            # Built in place (a virtualenv's scripts name their own path, so it cannot be renamed);
            # `.complete`, written last under the lock, is what marks it usable.
            if final.exists():
                shutil.rmtree(final)
            final.mkdir()
            try:
                run_install([venv_python(), "-m", "venv", str(final / VENV)])
                pip = [str(final / VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
                run_install([*pip, "--no-warn-script-location", f"{spec.package}=={spec.version}", *spec.extra])
                if find_bin(final, spec.bin) is None:
                    raise InstallError(
                        f"{spec.package}=={spec.version} installed, but {spec.bin} is not in it"
                    )
                os.chmod(final, 0o755)
                (final / ".complete").write_text(f"{spec.kind} {spec.package} {spec.version}\n")
            except BaseException:
                with contextlib.suppress(OSError):
                    shutil.rmtree(final)
                raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return final


def entry(name: str, cache_dir: str | None = None) -> Path:
    """The executable (or script) of an installed memory system."""
    spec = _spec(name)
    path = find_bin(installed(name, cache_dir), spec.bin)
    if path is None:
        raise InstallError(f"{spec.package}@{spec.version} is installed but {spec.bin} is missing")
    return path


def main(argv: list[str] | None = None) -> int:
    """Install the named memory systems (all by default)."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.memory.install", description=__doc__.splitlines()[0])
    ap.add_argument("systems", nargs="*", help=f"which to install: {', '.join(SYSTEMS)} or all (default: all)")
    ap.add_argument("--cache-dir", help="install cache (default: $SDEBENCH_AGENT_CACHE or /var/tmp/sdebench-agents)")
    args = ap.parse_args(argv)
    names = list(SYSTEMS) if not args.systems or "all" in args.systems else args.systems
    for name in names:
        try:
            print(f"{name}: {installed(name, args.cache_dir)}")
        except InstallError as e:
            print(f"{name}: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
