"""Retrieval diagnostics of LLM-agent episodes: litellm over real HTTP to the scripted test model
server, which makes real `memory_search`, `bash` and `read_file` calls through the toolbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdebench.agents.trajectory import read
from sdebench.analysis import retrieval as analysis
from sdebench.runs import results
from sdebench.testing import testmodel
from tests.agents.test_llm_episode import KEY_ENV, PLANTED, ROOT, SUBMIT, _post_script, _requests, patch_edits
from tests.minitask import build_all

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


@pytest.fixture(scope="module")
def server():
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        yield testmodel.base_url(srv)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)


def _episode(task, base: str, steps: list[dict[str, Any]], tmp_path: Path, delivery: str, *overrides: str):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from sdebench.runs.assemble import run_episode
    from sdebench.sandbox import make_factory

    _post_script(base, steps)
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "agent=llm", "model=testmodel", f"model.api_base={base}", f"delivery={delivery}", "sandbox=unsafe_local",
            "max_interventions=0", *overrides])
    cfg = OmegaConf.to_container(cfg, resolve=True)
    factory = make_factory(dict(cfg["sandbox"]))
    traj = tmp_path / "traj.jsonl"
    try:
        rec = run_episode(task, cfg, factory, trajectory_path=traj, work_root=tmp_path)
    finally:
        factory.cleanup()
    assert rec.outcome.stop_reason != "error", rec.outcome.error
    return rec, read(traj)


def search(query: str, k: int | None = None) -> dict[str, Any]:
    return {"tool": "memory_search", "arguments": {"query": query} if k is None else {"query": query, "k": k}}


def _tool_outputs(base: str) -> list[str]:
    """The tool results the model received, in order (from the last request the server got)."""
    msgs = _requests(base)[-1]["body"]["messages"]
    return [m["content"] for m in msgs if m.get("role") == "tool"]


def test_memtool_records_the_rank_of_each_search_and_a_miss(mini, server, tmp_path):
    task = mini["K"]
    steps = [search("loyalty discount finance"), search("empty cart crash", k=3), *patch_edits(task.oracle_patch), SUBMIT]
    rec, _ = _episode(task, server, steps, tmp_path, "memtool")
    r = rec.retrieval
    assert rec.outcome.resolved and [s.query for s in r.searches] == ["loyalty discount finance", "empty cart crash"]
    found, miss = r.searches
    outputs = _tool_outputs(server)
    # the rank recorded is where the model really got the decisive item
    header = next(line for line in outputs[0].splitlines() if line.startswith(f"#{found.rank} (score "))
    assert found.rank is not None and "K:docs/pricing.md" in header and found.k == 5
    assert miss.rank is None and miss.k == 3 and miss.hits >= 1 and "K:docs/pricing.md" not in outputs[1]
    assert r.best_rank == found.rank and r.searchable and not r.in_workspace and r.retrieved is True
    assert r.touched_by == "memory_search" and r.touched_at == 1 and r.fact_in_diff


def test_memtool_that_never_finds_it_is_a_never_retrieved_failure(mini, server, tmp_path):
    task = mini["K"]
    rec, _ = _episode(task, server, [search("empty cart crash"), *patch_edits(task.conventional_patch), SUBMIT],
                      tmp_path, "memtool")
    r = rec.retrieval
    assert not rec.outcome.resolved and r.searches[0].rank is None and r.best_rank is None
    assert r.available and r.retrieved is False and r.touched is False and not r.fact_in_diff
    assert analysis.diagnosis(r.to_dict(), rec.outcome.resolved) == "never retrieved"


def test_full_git_log_of_the_fact_commit_touches_it_and_the_table_shows_it(mini, server, tmp_path):
    task = mini["H"]
    steps = [{"tool": "read_file", "arguments": {"path": "shop/pricing.py"}},
             {"tool": "bash", "arguments": {"command": "git log -p --no-color"}}, SUBMIT]
    rec, _ = _episode(task, server, steps, tmp_path, "full")
    r = rec.retrieval
    assert "set loyalty discount to 17 percent" in _tool_outputs(server)[1].lower()
    assert r.in_workspace and (r.touched, r.touched_at, r.touched_by) == (True, 2, "bash")
    assert r.retrieved is True and not rec.outcome.resolved and not r.fact_in_diff
    t = analysis.table(results.frame([rec]))
    row = t.iloc[0]
    assert (row["delivery"], row["retrieved"], row["used"], row["failed: retrieved, not used"]) == ("full", 1, 0, 1)
