"""`python -m sdebench.agents.installed [NAME ...]`: install installed agents at their pinned versions.

Installs into the agent cache ($SDEBENCH_AGENT_CACHE, default /var/tmp/sdebench-agents) what an
episode would install on first use; with no name, every installed agent of conf/agent/.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import yaml

from sdebench import CONF_DIR
from sdebench.agents.installed.base import InstalledAgent
from sdebench.agents.installed.install import InstallError, cache_root, ensure_installed
from sdebench.components import AGENTS, resolve


def installed_names() -> list[str]:
    """Registered agents that are installed CLIs."""
    return [n for n in AGENTS if issubclass(resolve("agent", n), InstalledAgent)]


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.agents.installed", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"agents (default: all of {', '.join(installed_names())})")
    args = ap.parse_args(argv)
    root = cache_root()
    for name in args.names or installed_names():
        if name not in installed_names():
            print(f"error: {name!r} is not an installed agent (choose {', '.join(installed_names())})", file=sys.stderr)
            return 2
        cls = resolve("agent", name)
        with open(f"{CONF_DIR}/agent/{name}.yaml") as f:
            conf = yaml.safe_load(f) or {}
        spec = replace(cls.spec, version=str(conf.get("version") or cls.spec.version))
        try:
            path = ensure_installed(spec, root)
        except InstallError as e:
            print(f"error: {name}: {e}", file=sys.stderr)
            return 1
        print(f"{name}: {spec.package}@{spec.version} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
