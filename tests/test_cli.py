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
    # a readable conversation, not raw events: tool calls by name and arguments, the grade, the outcome
    assert "[tool] write_file(path=" in shown.stdout or "[tool] edit_file(path=" in shown.stdout
    assert "[grade, attempt 1] resolved (FAIL_TO_PASS 1/1" in shown.stdout and '"kind"' not in shown.stdout
    assert sdebench("nope", cwd=tmp_path).returncode == 2
    _episode_list_and_show_by_id(tmp_path)


def _episode_list_and_show_by_id(tmp_path):
    from sdebench import cli

    old = os.getcwd()
    os.chdir(tmp_path)  # `results` is the default dir
    try:
        ls = sdebench("episode", "list", "--where", "agent=oracle", cwd=tmp_path)
        (line,) = [x for x in ls.stdout.splitlines() if "mini-pricing" in x]
        key = line.split()[0]
        assert ls.returncode == 0 and "squashed" in line and "resolved" in line and "1 episodes (agent=oracle)" in ls.stdout
        assert cli.main(["episode", "show", key[:8]]) == 0  # by a unique prefix of the id
        assert cli.main(["episode", "show", "0000000000000000"]) == 1  # unknown id: nothing to show
        assert cli.main(["episode", "list", "--where", "agent=nobody"]) == 1
        assert cli.main(["episode", "list", "--where", "agnt=oracle"]) == 2
    finally:
        os.chdir(old)


def test_results_slices_by_any_keys_in_three_formats(capsys):
    from sdebench import cli

    ref = str(ROOT / "experiments" / "reference")
    assert cli.main(["results", ref, "--by", "family,identity.agent", "--where", "delivery!=oracle", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("kind,task_set,feedback_hidden,tier,family,identity.agent,episodes,errors,resolved,")
    assert len(lines) == 4 and lines[1].startswith("static,published,binary,recall,billing-rounding,conventional,20,0,0,")
    assert cli.main(["results", ref, "--by", "agent", "--where", "agent=oracle", "--format", "json"]) == 0
    import json

    (row,) = json.loads(capsys.readouterr().out)
    assert (row["agent"], row["episodes"], row["resolved_1"], row["interventions_capped"]) == ("oracle", 25, 25, 0.0)
    assert cli.main(["results", ref, "--by", "competency", "--where", "source=K"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("15 episodes (source=K)") and "| static | published | binary | recall | recall | 15 |" in md
    assert cli.main(["results", ref, "--where", "agent=oracle", "--where", "resolved=false"]) == 1
    assert "no episodes match agent=oracle and resolved=false (of 75 under" in capsys.readouterr().err
    assert cli.main(["results", ref, "--where", "cost=0"]) == 2
    assert "unknown field 'cost' (did you mean" in capsys.readouterr().err
    assert cli.main(["results", ref, "--by", "famly"]) == 2
    assert "--by: unknown field 'famly' (did you mean 'family'?)" in capsys.readouterr().err


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
    # the families ship in the wheel: one task generated and validated from the empty dir
    gen = subprocess.run([str(venv / "bin" / "sdebench"), "generate", "--families", "ttlcache", "--variants", "0",
                          "--sources", "none", "--out", str(tmp_path / "gen"), "--no-progress"],
                         cwd=empty, env=clean, capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stderr[-2000:]
    assert (tmp_path / "gen" / "ttlcache-v0-none" / "task.toml").is_file()
    assert (tmp_path / "gen" / "ttlcache-v0-none").joinpath("repo.bundle").read_bytes() == \
        (ROOT / "tasks" / "ttlcache-v0-none" / "repo.bundle").read_bytes()
    # FINDINGS.md needs the committed sweep, which lives in a checkout: the error names the option
    findings = [str(venv / "bin" / "sdebench"), "report", "--findings", "--out", str(tmp_path / "F.md")]
    lost = subprocess.run(findings, cwd=empty, env=clean, capture_output=True, text=True, timeout=600)
    assert lost.returncode == 2 and "--reference DIR" in lost.stderr and len(lost.stderr.splitlines()) == 1
    reference = ROOT / "experiments" / "reference"
    found = subprocess.run([*findings, "--reference", str(reference)], cwd=empty, env=clean, capture_output=True,
                           text=True, timeout=600)
    assert found.returncode == 0, found.stderr[-2000:]
    from sdebench.analysis import findings as findings_module

    # outside a checkout the header names the dir, not its path in the repository
    expected = findings_module.render(reference).replace("`experiments/reference/`", "`reference/`", 1)
    assert (tmp_path / "F.md").read_text() == expected


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
    assert documented - {"agents", "memory"} <= shims | {"interop"}, documented - shims
