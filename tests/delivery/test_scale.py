"""Deliveries over a task at large memory scale (2,000 commits, 120 docs, 300 notes per file):
inject falls back to its top-k and the record says whether the decisive item made the budget;
memtool indexes the whole corpus; the reference agents still behave."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import corpus_from_repo, estimate_tokens, render_inject
from sdebench.generation.generate import build_task
from sdebench.generation.scale import LEVELS
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load

SANDBOX = {"backend": "unsafe_local"}
INJECT = {"name": "inject", "token_budget": 8000, "top_k": 10}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks-large")
    tasks = {}
    for source in ("K",):
        o = build_task(Path("generators/ttlcache.py"), 0, source, out, SANDBOX, None, scale=LEVELS["large"])
        assert o.written, o.violations
        tasks[source] = load(out / o.task_id)
    return tasks


def cfg(agent: str, delivery):
    return {"agent": {"name": agent}, "model": {"name": "none"}, "delivery": delivery, "seed": 0, "max_interventions": 1,
            "limits": {"max_turns": 50, "max_cost_usd": 2.0, "max_wall_s": 600}}


def corpus(task):
    with tempfile.TemporaryDirectory() as tmp:
        return corpus_from_repo(repo_mod.unbundle(task.bundle, Path(tmp) / "r"))


def test_inject_falls_back_to_top_k_and_the_record_says_if_the_fact_made_it(large, tmp_path):
    task = large["K"]
    items = corpus(task)
    assert sum(estimate_tokens(i.render()) for i in items) > 20 * INJECT["token_budget"]
    expected = render_inject(items, task.statement, INJECT["token_budget"], INJECT["top_k"])
    decisive = {d.id for d in decisive_items(task)}
    assert decisive and decisive <= {i.id for i in items}
    rec = run_episode(task, cfg("oracle", INJECT), make_factory(SANDBOX), work_root=tmp_path)
    assert rec.outcome.stop_reason != "error", rec.outcome.error
    assert rec.outcome.resolved and rec.outcome.interventions == 0
    info = rec.delivery.info()
    assert info["inject_mode"] == "top_k" and info["inject_tokens"] <= INJECT["token_budget"]
    assert info["inject_items"] == len(expected.items) <= INJECT["top_k"]
    r = rec.retrieval
    assert set(r.decisive) == decisive
    assert r.injected is bool(decisive & set(expected.items))
    assert r.available is r.injected and not r.in_workspace


def test_memtool_indexes_the_whole_large_corpus(large, tmp_path):
    task = large["K"]
    rec = run_episode(task, cfg("noop", {"name": "memtool"}), make_factory(SANDBOX), work_root=tmp_path)
    assert rec.outcome.stop_reason != "error", rec.outcome.error
    assert not rec.outcome.resolved
    assert rec.delivery.info()["corpus_items"] >= 2000 + 120 + 2 * 300
    assert rec.retrieval.searchable is True and rec.retrieval.available is True
