"""Shared fixtures: the project root and its committed tasks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sdebench.runs import schema
from tests import tiers

schema.register()  # tests that compose the config tree themselves meet its schemas too

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """An explicit -m expression selects by markers itself: every tier is on for it."""
    if config.option.markexpr:
        os.environ["SDEBENCH_TIERS"] = "all"


def pytest_collection_modifyitems(config, items):
    """Skip the heavy tiers that are off (tests/tiers.py); an explicit -m expression selects itself."""
    if config.option.markexpr:
        return
    on = tiers.enabled()
    for item in items:
        # markers only: item.keywords also holds directory names (tests/agents/ is no tier)
        off = [t for t in tiers.HEAVY if item.get_closest_marker(t) is not None and t not in on]
        if off:
            item.add_marker(pytest.mark.skip(reason=tiers.reason(off[0])))


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


@pytest.fixture(scope="session")
def sdebench_wheel(tmp_path_factory) -> Path:
    """sdebench's wheel, built once per session from a copy of the package (the checkout stays clean)."""
    import shutil
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "sdebench", src / "sdebench", ignore=shutil.ignore_patterns("__pycache__"))  # conf/ followed
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "wheels"), str(src)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp / "wheels").glob("sdebench-*.whl")
    return wheel
