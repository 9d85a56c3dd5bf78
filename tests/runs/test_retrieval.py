"""Retrieval diagnostics of whole episodes with the reference agents: the decisive items, inject in
and out of budget, full reads, the squashed control, partial observation, the record field."""

from __future__ import annotations

import pytest

from sdebench.agents.trajectory import read
from sdebench.delivery.decisive import decisive_items, fact_lines, in_workspace
from sdebench.delivery.memory import corpus_from_repo, render_inject
from sdebench.runs.assemble import run_episode
from sdebench.runs.record import EpisodeRecord, RecordError
from sdebench.runs.retrieval import Retrieval, RetrievalTracker, Search
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from tests.minitask import FACT_TOKENS, build_all

SANDBOX = {"backend": "unsafe_local"}


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def cfg(agent: str, delivery, **extra):
    d = delivery if isinstance(delivery, dict) else {"name": delivery}
    return {"agent": {"name": agent}, "model": {"name": "none"}, "delivery": d, "seed": 0, "max_interventions": 1,
            "limits": {"max_turns": 50, "max_cost_usd": 2.0, "max_wall_s": 600}, **extra}


def episode(task, agent, delivery, tmp_path, **extra):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(task, cfg(agent, delivery, **extra), make_factory(SANDBOX), trajectory_path=traj, work_root=tmp_path)
    assert rec.outcome.stop_reason != "error", rec.outcome.error
    return rec, read(traj)


# --- the definition ----------------------------------------------------------------------------
def test_decisive_items_are_the_fact_bearing_item_of_the_placement(mini):
    assert [d.id for d in decisive_items(mini["K"])] == ["K:docs/pricing.md"]
    f = decisive_items(mini["F"])
    assert len(f) == 1 and f[0].id.startswith("F:.agent/preferences.md#") and f[0].path == ".agent/preferences.md"
    assert "the user corrected me: the loyalty discount is 17 percent, not a round number." in f[0].lines[0]
    assert decisive_items(mini["none"]) == ()
    h = decisive_items(mini["H"])
    # the commit that set 0.17 and the one whose diff removed it; both with full shas from the bundle
    assert len(h) == 2 and all(d.source == "H" and len(d.sha) == 40 and d.id == f"H:{d.sha[:10]}" for d in h)
    assert any("set loyalty discount to 17 percent as agreed with finance" in line for d in h for line in d.lines)


def test_fact_lines_prefer_long_lines_and_in_workspace_checks_the_file(mini, tmp_path):
    assert fact_lines("rate:\n0.17\nThe   rate is 0.17 for members\n", FACT_TOKENS) == ("the rate is 0.17 for members",)
    assert fact_lines("0.17\n", FACT_TOKENS) == ("0.17",)
    (k,) = decisive_items(mini["K"])
    full = repo_mod.unbundle(mini["K"].bundle, tmp_path / "full")
    assert in_workspace(k, full)
    (full / "docs" / "pricing.md").write_text("# Pricing\n")
    assert not in_workspace(k, full)


# --- inject -------------------------------------------------------------------------------------
def test_inject_whole_corpus_has_the_item_in_budget(mini, tmp_path):
    rec, _ = episode(mini["K"], "oracle", "inject", tmp_path)
    r = rec.retrieval
    assert rec.delivery.info()["inject_mode"] == "all"
    assert r.injected is True and r.available and r.retrieved is True and not r.in_workspace and r.searches == []
    assert r.fact_in_diff is True and r.decisive == ["K:docs/pricing.md"]


def _budget_without(task, tmp_path):
    """A token budget whose top-k injection holds some items of `task` but not its decisive one."""
    items = corpus_from_repo(repo_mod.unbundle(task.bundle, tmp_path / "c"))
    ids = {d.id for d in decisive_items(task)}
    for budget in range(20, 2000, 5):
        inj = render_inject(items, task.statement, budget)
        if inj.items and not ids & set(inj.items):
            return budget, inj
    raise AssertionError("no budget leaves the decisive item out")


def test_inject_out_of_budget_is_no_route_and_the_prompt_lacks_the_fact(mini, tmp_path):
    budget, inj = _budget_without(mini["K"], tmp_path)
    rec, _ = episode(mini["K"], "learner", {"name": "inject", "token_budget": budget}, tmp_path)
    r = rec.retrieval
    assert rec.delivery.info()["inject_mode"] == "top_k" and rec.delivery.info()["inject_items"] == len(inj.items)
    assert r.injected is False and r.available is False and r.retrieved is False
    # the learner saw no fact in its prompt, so it applied the conventional fix: nothing of the fact in the diff
    assert not rec.outcome.resolved and r.fact_in_diff is False


# --- full and the squashed control --------------------------------------------------------------
def test_full_read_of_the_note_touches_it(mini, tmp_path):
    rec, events = episode(mini["F"], "learner", "full", tmp_path)
    r = rec.retrieval
    tools = [e for e in events if e["kind"] == "tool"]
    assert tools[0]["name"] == "read_file" and tools[0]["arguments"] == {"path": ".agent/preferences.md"}
    assert r.in_workspace and r.available and r.injected is None
    assert (r.touched, r.touched_at, r.touched_by, r.retrieved) == (True, 1, "read_file", True)
    assert rec.outcome.resolved and r.fact_in_diff


def test_full_with_the_fact_in_a_doc_it_never_reads_is_never_retrieved(mini, tmp_path):
    # the learner reads only the .agent notes; the K fact is in docs/pricing.md
    rec, _ = episode(mini["K"], "learner", "full", tmp_path)
    r = rec.retrieval
    assert r.in_workspace and r.available and r.touched is False and r.retrieved is False
    assert not rec.outcome.resolved and not r.fact_in_diff


def test_squashed_is_the_control_nothing_to_find(mini, tmp_path):
    rec, _ = episode(mini["K"], "oracle", "squashed", tmp_path)
    r = rec.retrieval
    assert r.decisive == ["K:docs/pricing.md"]
    assert (r.available, r.in_workspace, r.searchable, r.injected, r.touched, r.retrieved) == (False, False, False, None, False, False)
    assert rec.outcome.resolved and r.fact_in_diff  # the oracle agent holds the answer key: resolved without retrieval


def test_memtool_search_by_the_learner_ranks_the_item(mini, tmp_path):
    rec, events = episode(mini["X"], "learner", "memtool", tmp_path)
    r = rec.retrieval
    (s,) = r.searches
    assert s.k == 20 and s.hits >= 1 and s.rank is not None and r.best_rank == s.rank
    out = next(e["output"] for e in events if e["kind"] == "tool" and e["name"] == "memory_search")
    header = next(line for line in out.splitlines() if line.startswith(f"#{s.rank} (score "))
    assert r.decisive[0] in header  # the hit the agent got at that rank is the decisive note entry
    assert r.searchable and r.touched and r.touched_by == "memory_search" and r.retrieved and rec.outcome.resolved


# --- partial observation and the record field ---------------------------------------------------
def test_partial_observation_makes_an_unseen_touch_unknown(mini, tmp_path):
    full = repo_mod.unbundle(mini["K"].bundle, tmp_path / "ws")
    dec = decisive_items(mini["K"])
    t = RetrievalTracker(dec, workspace=full, partial=True)
    t.tool("memory_search", {"query": "x"}, "nothing here", False)
    r = t.finish("", FACT_TOKENS)
    assert r.observed == "partial" and r.touched is None and r.retrieved is None
    seen = RetrievalTracker(dec, workspace=full, partial=True)
    seen.tool("bash", {"command": "cat docs/pricing.md"}, (full / "docs" / "pricing.md").read_text(), False)
    assert seen.finish("+LOYALTY_RATE = 0.17\n", FACT_TOKENS).retrieved is True
    # without the item in the workspace an installed CLI has no unseen route: a miss is a known miss
    none = RetrievalTracker(dec, workspace=tmp_path, partial=True).finish("", FACT_TOKENS)
    assert none.touched is False and none.retrieved is False


def test_the_record_field_round_trips_and_old_records_load():
    rec = EpisodeRecord.from_flat(dict(task_id="t", family="f", variant=0, source="K", bottleneck="knowledge-missing",
                                       delivery="memtool", agent="a", model="m", seed=0))
    rec.retrieval = Retrieval(decisive=["K:docs/x.md"], available=True, searchable=True,
                              searches=[Search("q", 5, 3, 2), Search("r", 5, 0, None)], best_rank=2, retrieved=True)
    back = EpisodeRecord.from_json(rec.to_json())
    assert back.retrieval == rec.retrieval and back.retrieval.searches[0].rank == 2
    old = {k: v for k, v in rec.to_dict().items() if k != "retrieval"}  # a record written before the field
    assert EpisodeRecord.from_dict(old).retrieval is None
    with pytest.raises(RecordError, match="retrieval"):
        EpisodeRecord.from_dict({**rec.to_dict(), "retrieval": {"searches": "nope"}})
    with pytest.raises(RecordError, match="retrieval"):
        EpisodeRecord.from_dict({**rec.to_dict(), "retrieval": [1]})
