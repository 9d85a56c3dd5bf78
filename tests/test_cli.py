"""The `sdebench` command: subcommands, `tasks`, `episode`, and a wheel that runs from any directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.minitask import build_all

ROOT = Path(__file__).resolve().parents[1]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def sdebench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdebench", *args], cwd=cwd, env=env(), capture_output=True,
                          text=True, timeout=600)


def test_tasks_list_and_show_hide_the_fact_unless_revealed(tmp_path):
    build_all(tmp_path / "tasks")
    ls = sdebench("tasks", "list", cwd=tmp_path)
    assert ls.returncode == 0 and "mini-pricing-v0-K" in ls.stdout and "5 tasks" in ls.stdout
    show = sdebench("tasks", "show", "mini-pricing-v0-K", cwd=tmp_path)
    assert show.returncode == 0 and "placement: the fact lives in K" in show.stdout and "statement:" in show.stdout
    assert "0.17" not in show.stdout and "fact:" not in show.stdout
    revealed = sdebench("tasks", "show", "mini-pricing-v0-K", "--reveal", cwd=tmp_path)
    assert "fact: The loyalty discount is 17 percent" in revealed.stdout
    nowhere = sdebench("tasks", "list", "--tasks-dir", "nope", cwd=tmp_path)
    assert nowhere.returncode == 2 and str(tmp_path / "nope") in nowhere.stderr


def test_run_then_episode_show(tmp_path):
    build_all(tmp_path / "tasks")
    r = sdebench("run", "agent=oracle", "delivery=squashed", "source=K", "sandbox=unsafe_local", "progress=false",
                 f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    (record,) = (tmp_path / "results").rglob("*.json")
    shown = sdebench("episode", "show", str(record), cwd=tmp_path)
    assert shown.returncode == 0 and "resolved at submit 1" in shown.stdout
    kinds = [line.split()[1] for line in shown.stdout.splitlines()[1:]]
    assert kinds[0] == "episode_start" and kinds[-1] == "episode_end" and "grade" in kinds
    assert sdebench("nope", cwd=tmp_path).returncode == 2


@pytest.mark.slow
def test_the_wheel_carries_its_configs_and_runs_from_an_empty_dir(tmp_path, sdebench_wheel):
    wheel = sdebench_wheel
    venv = tmp_path / "venv"
    # the dependencies come from this interpreter's site-packages; the package itself only from the wheel
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    empty = tmp_path / "empty"
    empty.mkdir()
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import sdebench; print(sdebench.__file__)"],
                           cwd=empty, env=clean, capture_output=True, text=True, check=True)
    assert str(venv) in where.stdout  # the installed copy, not this checkout
    build_all(tmp_path / "tasks")
    r = subprocess.run([str(venv / "bin" / "sdebench"), "run", "agent=oracle", "delivery=squashed", "source=K",
                        "sandbox=unsafe_local", f"tasks_dir={tmp_path / 'tasks'}", "progress=false"],
                       cwd=empty, env=clean, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| K | 1/1 (0.0) |" in r.stdout or "| K | 1/1" in r.stdout
    missing = subprocess.run([str(venv / "bin" / "sdebench"), "run", "agent=oracle"], cwd=empty, env=clean,
                             capture_output=True, text=True, timeout=600)
    assert missing.returncode == 2 and str(empty / "tasks") in missing.stderr


def test_one_dispatch_table_behind_every_way_in():
    """`sdebench X` and `python -m sdebench.X` reach the same function: each shim only calls cli.entry("X")."""
    import importlib
    import re

    from sdebench import cli

    root = Path(__file__).resolve().parents[1]
    for target in cli.COMMANDS.values():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), target
    shims = {p.stem for p in (root / "sdebench").glob("*.py")} - {"__init__", "__main__", "cli", "components", "errors"}
    for name in shims:
        src = (root / "sdebench" / f"{name}.py").read_text()
        assert name in cli.COMMANDS and f'entry("{name}")' in src and "import sdebench.cli" not in src, name
    documented = set()
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        documented |= set(re.findall(r"python -m sdebench\.([a-z_]\w*)", doc.read_text()))  # `sdebench.X`: a placeholder
    assert documented - {"agents"} <= shims | {"interop"}, documented - shims
