"""The OpenEnv entry of this repository (`openenv.yaml` names it): the sdebench environment server.

    python -m server.app --host 0.0.0.0 --port 8000 --tasks-dir tasks     # = sdebench serve ...
    uvicorn server.app:app --host 0.0.0.0 --port 8000                     # SDEBENCH_TASKS_DIR, SDEBENCH_SANDBOX

`main` is `sdebench serve` (sdebench.env.server.main); `app` is the same FastAPI app for a plain
ASGI server, built on first use from SDEBENCH_TASKS_DIR (default `tasks`) and SDEBENCH_SANDBOX
(default `local`: bubblewrap; `unsafe_local` runs graded code unisolated and must be named).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    """Serve the environment (the options of `sdebench serve --help`)."""
    from sdebench.env.server import main as serve

    return serve(sys.argv[1:] if argv is None else argv)


def build_app() -> Any:
    """The environment server's ASGI app, configured from the environment variables above."""
    from sdebench.env.server import create_app
    from sdebench.sandbox import make_factory

    tasks_dir = Path(os.environ.get("SDEBENCH_TASKS_DIR", "tasks"))
    sandbox = os.environ.get("SDEBENCH_SANDBOX", "local")
    factory = make_factory({"backend": sandbox, "tasks_dir": str(tasks_dir.resolve())})
    return create_app(tasks_dir, factory, allow_unsafe=sandbox == "unsafe_local")


def __getattr__(name: str) -> Any:
    # `app` is built when an ASGI server asks for it, not when this module is imported.
    if name == "app":
        app = globals()["app"] = build_app()
        return app
    raise AttributeError(name)


if __name__ == "__main__":
    sys.exit(main())
