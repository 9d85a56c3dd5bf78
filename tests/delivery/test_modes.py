"""Delivery modes: for every task, the memory-free workspaces leak no fact and have no history,
the full workspace carries the fact in its designated source, and the extras are right."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sdebench.components import ComponentError, build_delivery
from sdebench.delivery.modes import MEMORY_TOOL, STANDARD_TOOLS
from sdebench.tasks import repo
from sdebench.tasks.artifacts import artifact_kind
from sdebench.tasks.record import load
from sdebench.tasks.tokens import find_tokens
from tests.minitask import build_all, repo_tasks

CLEAN = ("squashed", "memtool", "inject", "oracle")
MINI = [f"mini:{s}" for s in ("H", "K", "F", "X", "none")]
ALL = MINI + [f"repo:{p.name}" for p in repo_tasks()]


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def get_task(name: str, mini):
    kind, rest = name.split(":", 1)
    return mini[rest] if kind == "mini" else load(Path(__file__).resolve().parents[2] / "tasks" / rest)


def workspace_files(ws: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for f in filenames:
            p = Path(dirpath) / f
            out[p.relative_to(ws).as_posix()] = p.read_text(errors="replace")
    return out


@pytest.mark.parametrize("name", ALL)
def test_memory_free_workspaces_hold_no_fact_and_no_history(name, mini, tmp_path):
    task = get_task(name, mini)
    full = build_delivery({"name": "full"}).prepare(task, tmp_path / "full")
    full_code = {p: t for p, t in workspace_files(full.workspace).items() if p not in task.memory_artifacts}
    for mode in CLEAN:
        prep = build_delivery({"name": mode}).prepare(task, tmp_path / mode)
        files = workspace_files(prep.workspace)
        leaks = {p: find_tokens(t, task.fact_tokens) for p, t in files.items() if find_tokens(t, task.fact_tokens)}
        assert leaks == {}, f"{mode}: fact tokens in {leaks}"
        hist = repo.history(prep.workspace)
        assert len(hist) == 1, f"{mode}: {len(hist)} commits"
        assert not find_tokens(hist[0].message + "".join(hist[0].diffs.values()), task.fact_tokens)
        assert repo.refs(prep.workspace) == ["refs/heads/main"]
        assert not set(files) & set(task.memory_artifacts)
        # code and visible tests are exactly those of the full repo
        assert files == full_code
        assert not (tmp_path / mode / "full-clone").exists()


def _fact_places(task, ws: Path) -> set[str]:
    places = set()
    for path, text in workspace_files(ws).items():
        if find_tokens(text, task.fact_tokens):
            places.add(artifact_kind(path) or "code")
    for c in repo.history(ws):
        if find_tokens(c.message, task.fact_tokens):
            places.add("H")
        for path, body in c.diffs.items():
            # diff bodies minus hunk headers: their line numbers are positions, not content
            lines = "\n".join(line for line in body.splitlines() if not line.startswith("@@"))
            if find_tokens(lines, task.fact_tokens) and artifact_kind(path) is None:
                places.add("H")
    return places


@pytest.mark.parametrize("name", ALL)
def test_full_workspace_holds_the_fact_in_its_source(name, mini, tmp_path):
    task = get_task(name, mini)
    prep = build_delivery({"name": "full"}).prepare(task, tmp_path)
    assert repo.head_sha(prep.workspace) == task.head_sha
    assert len(repo.history(prep.workspace)) == task.commits
    assert prep.tools == STANDARD_TOOLS and prep.prompt_additions == []
    places = _fact_places(task, prep.workspace)
    if task.source == "none":
        assert places == set()
    else:
        assert task.source in places and "code" not in places


@pytest.mark.parametrize("source", ["H", "K", "F", "X", "none"])
def test_extras_of_each_mode(source, mini, tmp_path):
    task = mini[source]
    memtool = build_delivery({"name": "memtool", "default_k": 3}).prepare(task, tmp_path / "m")
    assert memtool.tools == (*STANDARD_TOOLS, MEMORY_TOOL) and memtool.prompt_additions == []
    assert memtool.memory is not None and memtool.info["default_k"] == 3
    hits = memtool.memory.index.search("loyalty discount percent", 10)
    assert bool([h for h in hits if find_tokens(h.item.text, task.fact_tokens)]) == (source != "none")

    inject = build_delivery({"name": "inject"}).prepare(task, tmp_path / "i")
    assert inject.tools == STANDARD_TOOLS and len(inject.prompt_additions) == 1
    assert inject.info["inject_tokens"] > 0 and inject.info["inject_mode"] == "all"
    assert bool(find_tokens(inject.prompt_additions[0], task.fact_tokens)) == (source != "none")

    oracle = build_delivery({"name": "oracle"}).prepare(task, tmp_path / "o")
    assert oracle.tools == STANDARD_TOOLS
    assert len(oracle.prompt_additions) == 1 and task.fact in oracle.prompt_additions[0]

    squashed = build_delivery({"name": "squashed"}).prepare(task, tmp_path / "s")
    assert squashed.tools == STANDARD_TOOLS and squashed.prompt_additions == [] and squashed.memory is None


def test_inject_budget_falls_back_to_top_items(mini, tmp_path):
    prep = build_delivery({"name": "inject", "token_budget": 200, "top_k": 5}).prepare(mini["K"], tmp_path)
    assert prep.info["inject_mode"] == "top_k" and 0 < prep.info["inject_tokens"] <= 200
    assert find_tokens(prep.prompt_additions[0], mini["K"].fact_tokens)


def test_bad_delivery_names_and_options():
    with pytest.raises(ComponentError, match="unknown delivery 'zip'"):
        build_delivery({"name": "zip"})
    with pytest.raises(ComponentError, match="bad options for delivery 'inject'"):
        build_delivery({"name": "inject", "budget": 3})
