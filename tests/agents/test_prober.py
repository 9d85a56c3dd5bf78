"""The prober reference agent: searches its family's fact space through the toolbox, never told the fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdebench.agents.prober import parse_feedback, policy_of
from sdebench.agents.trajectory import read
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load
from tests.generation.test_probe import SMALL

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = {"backend": "unsafe_local"}


def cfg(tmp: Path, delivery: str = "squashed", policy: str = "binary", generators: Path | None = None):
    return {"agent": {"name": "prober", "generators": str(generators) if generators else None,
                      "cache_dir": str(tmp / "cache")},
            "model": {"name": "none"}, "delivery": {"name": delivery}, "seed": 0, "max_interventions": 5,
            "grading": {"feedback_hidden": policy},
            "limits": {"max_turns": 50, "max_cost_usd": 2.0, "max_wall_s": 600}}


def test_the_policy_is_read_from_the_feedback():
    assert policy_of("Not resolved.\n\nHeld-out tests fail.") == "binary"
    assert policy_of("Not resolved.\n\nHeld-out tests: 2 of 3 fail.") == "counts"
    assert policy_of("Not resolved.\n\nHeld-out tests: 1 of 3 fail.\n- tests/t.py::test_a") == "tests"


def test_parse_feedback_per_policy():
    hidden = {"tests/test_hidden_x.py::test_a"}
    text = "Not resolved.\n\nHeld-out tests: 1 of 3 fail. 2 visible tests failed their held-out re-check."
    assert parse_feedback("Resolved: all 9 graded tests pass.", "counts", hidden) is None
    assert parse_feedback(text, "binary", hidden) == "fail"
    assert parse_feedback(text, "counts", hidden) == (1, 2)
    listed = "Not resolved.\n\nHeld-out tests: 1 of 3 fail.\n- tests/test_hidden_x.py::test_a\n- tests/t.py::test_v"
    assert parse_feedback(listed, "tests", hidden) == (("tests/test_hidden_x.py::test_a",), ("tests/t.py::test_v",))


@pytest.mark.slow
@pytest.mark.parametrize("delivery,policy", [("squashed", "binary"), ("oracle", "counts")])
def test_prober_does_not_find_a_declared_fact(tmp_path, delivery, policy):
    task = load(ROOT / "tasks" / "ttlcache-v0-none")
    traj = tmp_path / "t.jsonl"
    rec = run_episode(task, cfg(tmp_path, delivery, policy), make_factory(SANDBOX), trajectory_path=traj)
    assert rec.outcome.error is None, rec.outcome.error
    assert not rec.outcome.resolved and rec.outcome.interventions == 5 and rec.usage.tool_calls["submit"] == 6
    notes = [e for e in read(traj) if e["kind"] == "agent_note"]
    assert len({n["submit"] for n in notes}) == 6  # a new candidate each time


@pytest.mark.slow
def test_prober_finds_a_fact_in_a_small_space(tmp_path):
    gens = tmp_path / "gens"
    gens.mkdir()
    (gens / "smallttl.py").write_text(SMALL.format(root=str(ROOT)))
    task = load(ROOT / "tasks" / "ttlcache-v0-none")
    rec = run_episode(task, cfg(tmp_path, generators=gens), make_factory(SANDBOX))
    assert rec.outcome.error is None, rec.outcome.error
    # Five minutes first (conventional), then the fact: resolved at the second submit.
    assert rec.outcome.resolved and rec.outcome.interventions == 1


def test_a_family_without_a_space_is_an_episode_error(tmp_path):
    task = load(ROOT / "tasks" / "ttlcache-v0-none")
    rec = run_episode(task, cfg(tmp_path, generators=tmp_path), make_factory(SANDBOX))
    assert rec.outcome.error and "matches no family" in rec.outcome.error
