"""Installing the memory systems, pinned, into the shared install cache (beside the agent CLIs).

    python -m sdebench.memory.install [kg basic-memory mem0 | all]

Each system is one `InstallSpec` (sdebench.agents.installed.install): an npm package with its
executable, or a PyPI package installed with its dependencies into its own dir. Nothing here
downloads a model; the systems that embed text are configured to use the project's model gateway.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdebench.agents.installed.install import (
    InstallError,
    InstallSpec,
    cache_root,
    ensure_installed,
    find_bin,
)

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
}


def installed(name: str, cache_dir: str | None = None) -> Path:
    """The install dir of memory system `name`, installing it first if needed; InstallError if it cannot be."""
    spec = SYSTEMS.get(name)
    if spec is None:
        raise InstallError(f"unknown memory system {name!r} (installable: {', '.join(SYSTEMS)})")
    return ensure_installed(spec, cache_root(cache_dir))


def entry(name: str, cache_dir: str | None = None) -> Path:
    """The executable (or script) of an installed memory system."""
    spec = SYSTEMS[name]
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
