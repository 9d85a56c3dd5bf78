"""Where the Hydra config tree lives, for every entry point that composes it."""

from __future__ import annotations

from pathlib import Path

# An absolute path: the entry points run as `python -m sdebench.<name>`, so Hydra cannot resolve a
# path relative to a module inside the package.
CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")
