"""Shared fixtures: the project root and its committed tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    """The project root."""
    return ROOT


@pytest.fixture(scope="session")
def tasks_dir() -> Path:
    """The committed benchmark."""
    return ROOT / "tasks"


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory) -> Path:
    """A real reference-agent sweep (2 sources x 2 deliveries x 3 agents over one family) run through
    `python -m sdebench.run -m`; returns its results dir. Shared by the analysis, plot, report and
    notebook tests."""
    import os
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("sweep")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    args = ["-m", "delivery=squashed,oracle", "source=K,H", "agent=oracle,conventional,noop",
            "select.family=billing-rounding", "select.variant=0", "sandbox=unsafe_local",
            f"tasks_dir={ROOT / 'tasks'}", f"results_dir={out / 'results'}", f"hydra.sweep.dir={out / 'sweep'}"]
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=out, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return out / "results"
