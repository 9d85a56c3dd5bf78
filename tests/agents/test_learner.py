"""The learner agent: oracle fix only when the memory its delivery exposes holds the fact."""

from __future__ import annotations

import pytest

from sdebench.agents.learner import LearnerAgent
from sdebench.agents.trajectory import read
from sdebench.components import build_agent
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from tests.minitask import build_all

SANDBOX = {"backend": "unsafe_local"}


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def cfg(delivery: str):
    return {"agent": {"name": "learner"}, "model": {"name": "none"}, "delivery": {"name": delivery}, "seed": 0,
            "max_interventions": 5, "limits": {"max_turns": 50, "max_cost_usd": 2.0, "max_wall_s": 600}}


@pytest.mark.parametrize("source,delivery,learns", [
    ("F", "full", True),        # reads .agent/preferences.md in the workspace
    ("X", "full", True),        # reads .agent/past_fixes.md
    ("X", "memtool", True),     # finds the entry with memory_search
    ("F", "inject", True),      # sees it in the prompt
    ("K", "oracle", True),      # the fact itself is pushed
    ("F", "squashed", False),   # no memory reaches it
    ("none", "full", False),    # the fact is nowhere
    ("K", "full", False),       # docs are not among the channels it reads
])
def test_learner_fixes_only_when_its_memory_holds_the_fact(mini, tmp_path, source, delivery, learns):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(mini[source], cfg(delivery), make_factory(SANDBOX), trajectory_path=traj)
    assert rec.outcome.error is None
    decisions = [e["choice"] for e in read(traj) if e["kind"] == "learner_decision"]
    if learns:
        assert rec.outcome.resolved and rec.outcome.interventions == 0 and decisions == ["oracle"]
        assert "+LOYALTY_RATE = 0.17" in rec.outcome.final_diff
    else:
        # it looks again after every feedback, finds nothing new, and resubmits the conventional fix
        assert not rec.outcome.resolved and rec.outcome.interventions == 5 and decisions == ["conventional"] * 6
        assert rec.usage.tool_calls["edit_file"] == 1 and rec.usage.tool_calls["submit"] == 6
        assert len(rec.outcome.feedback) == 5


def test_learner_is_registered():
    assert isinstance(build_agent({"name": "learner"}), LearnerAgent)


def test_learner_switches_fix_when_memory_changes_between_attempts(mini, tmp_path):
    from sdebench.agents.base import AgentContext, AnswerKey, Limits
    from sdebench.agents.tools import Toolbox
    from sdebench.agents.trajectory import Trajectory, TrajectoryView
    from sdebench.tasks import repo

    task = mini["none"]
    ws = repo.unbundle(task.bundle, tmp_path / "ws")
    traj = Trajectory(tmp_path / "t.jsonl")
    tools = ("bash", "read_file", "edit_file", "write_file", "submit")
    box = Toolbox(make_factory(SANDBOX).open(ws), tools, None, traj)
    ctx = AgentContext(task.statement, [], box.view(), TrajectoryView(traj), Limits(), answer_key=AnswerKey.of(task))
    agent = LearnerAgent()
    agent.start(ctx)
    agent.run()
    assert "LOYALTY_RATE = 0.15" in (ws / "shop" / "pricing.py").read_text()
    ctx.prompt_additions.append(f"A note: {task.fact}")
    agent.run()
    code = (ws / "shop" / "pricing.py").read_text()
    assert "LOYALTY_RATE = 0.17" in code and "0.15" not in code and "0.10" not in code
    assert [d["choice"] for d in agent.decisions] == ["conventional", "oracle"] and agent.errors == []
