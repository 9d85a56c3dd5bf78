"""Reference agents: patch parsing, acting only through a real toolbox, their answer key, and the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdebench.agents.base import AgentContext, AnswerKey, Limits
from sdebench.agents.reference import (
    ConventionalAgent,
    NoopAgent,
    OracleAgent,
    PatchAgent,
    PatchError,
    parse_patch,
)
from sdebench.agents.tools import Toolbox
from sdebench.agents.trajectory import Trajectory, TrajectoryView, read
from sdebench.components import AGENTS, ComponentError, build_agent, build_delivery, resolve
from sdebench.sandbox import make_factory
from sdebench.tasks import repo
from sdebench.tasks.commits import Commit
from sdebench.tasks.record import load
from tests.minitask import build_all, repo_tasks

BEFORE = {
    "a.py": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
    "gone.txt": "bye\n",
    "tail.txt": "no newline at end",
}
AFTER = {
    "a.py": "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nTEN\n",
    "new/file.py": "x = 1\n",
    "tail.txt": "still no newline",
}


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def ctx_for(task, ws: Path, tmp: Path, key: bool = True) -> AgentContext:
    traj = Trajectory(tmp / "traj.jsonl")
    box = Toolbox(make_factory({"backend": "unsafe_local"}).open(ws), ("bash", "read_file", "edit_file", "write_file", "submit"),
                  None, traj)
    return AgentContext(task.statement, [], box.view(), TrajectoryView(traj), Limits(),
                        answer_key=AnswerKey.of(task) if key else None)


def test_parse_patch_kinds_and_newlines():
    changes = {c.path: c for c in parse_patch(repo.diff_files(BEFORE, AFTER))}
    assert changes["gone.txt"].kind == "delete"
    assert changes["new/file.py"].kind == "create" and changes["new/file.py"].hunks == [("", "x = 1\n")]
    assert len(changes["a.py"].hunks) == 2
    assert changes["tail.txt"].hunks == [("no newline at end", "still no newline")]
    with pytest.raises(PatchError):
        parse_patch("not a patch")
    with pytest.raises(PatchError, match="ends early"):
        parse_patch("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n")


def test_patch_agent_applies_through_the_toolbox(mini, tmp_path):
    ws = tmp_path / "ws"
    repo.build(ws, [Commit("start", BEFORE)])
    patch = tmp_path / "fix.patch"
    patch.write_text(repo.diff_files(BEFORE, AFTER))
    agent = build_agent({"name": "patch", "patch": str(patch)})
    assert isinstance(agent, PatchAgent)
    ctx = ctx_for(mini["K"], ws, tmp_path)
    agent.start(ctx)
    res = agent.run()
    assert res.stop_reason == "submitted" and res.turns >= 5 and not res.extra
    assert {p: (ws / p).read_text() for p in AFTER} == AFTER and not (ws / "gone.txt").exists()
    names = [e["name"] for e in read(tmp_path / "traj.jsonl") if e["kind"] == "tool"]
    assert names[-1] == "submit" and "edit_file" in names and "write_file" in names and "bash" in names
    # feedback then run again: resubmits without re-applying
    agent.feedback("tests failed")
    again = agent.run()
    assert again.stop_reason == "submitted" and again.turns == 1


def test_a_patch_that_does_not_apply_is_reported_not_raised(mini, tmp_path):
    ws = tmp_path / "ws"
    repo.build(ws, [Commit("start", {"a.py": "something else\n"})])
    patch = tmp_path / "fix.patch"
    patch.write_text(repo.diff_files(BEFORE, AFTER))
    agent = PatchAgent(patch)
    agent.start(ctx_for(mini["K"], ws, tmp_path))
    res = agent.run()
    assert res.stop_reason == "submitted" and any("not found" in e for e in res.extra["errors"])


@pytest.mark.parametrize("task_dir", repo_tasks()[:: max(1, len(repo_tasks()) // 4)], ids=lambda p: p.name)
def test_oracle_and_conventional_reproduce_their_patches(task_dir, tmp_path):
    task = load(task_dir)
    for cls, patch in ((OracleAgent, task.oracle_patch), (ConventionalAgent, task.conventional_patch)):
        ws = build_delivery({"name": "squashed"}).prepare(task, tmp_path / cls.name).workspace
        expect = tmp_path / f"{cls.name}-expect"
        repo.squash(ws, expect)
        repo.apply_patch(expect, patch)
        agent = cls()
        agent.start(ctx_for(task, ws, tmp_path))
        assert agent.run().stop_reason == "submitted" and not agent.errors
        assert repo.worktree_diff(ws) == repo.worktree_diff(expect)


def test_noop_submits_at_once(mini, tmp_path):
    ws = build_delivery({"name": "squashed"}).prepare(mini["K"], tmp_path).workspace
    agent = build_agent({"name": "noop"})
    assert isinstance(agent, NoopAgent)
    agent.start(ctx_for(mini["K"], ws, tmp_path))
    res = agent.run()
    assert res.stop_reason == "submitted" and res.turns == 1
    assert agent.usage.prompt_tokens == 0 and agent.usage.cost_usd == 0
    assert repo.worktree_diff(ws) == ""


def test_registry_and_bad_agent_configs(tmp_path):
    assert set(AGENTS) == {"noop", "oracle", "conventional", "patch", "prober", "reader-top1", "reader-latest",
                           "reader-majority", "searcher", "learner", "llm", "claude-code", "codex", "mini-swe-agent",
                           "qwen-code", "opencode", "aider", "gemini-cli"}
    assert isinstance(build_agent({"name": "oracle"}, {"name": "none"}), OracleAgent)
    assert isinstance(build_agent({"name": "conventional"}), ConventionalAgent)
    with pytest.raises(ComponentError, match="unknown agent 'smart'"):
        build_agent({"name": "smart"})
    with pytest.raises(ValueError, match=r"needs agent.patch=PATH"):
        build_agent({"name": "patch", "patch": None})
    with pytest.raises(ValueError, match="no such file"):
        build_agent({"name": "patch", "patch": str(tmp_path / "missing.patch")})


def test_only_the_answer_key_agents_ask_for_it():
    asking = {n for n in AGENTS if resolve("agent", n).capabilities.needs_answer_key}
    assert asking == {"oracle", "conventional", "learner"}


def test_an_oracle_without_its_answer_key_reports_it(mini, tmp_path):
    ws = build_delivery({"name": "squashed"}).prepare(mini["K"], tmp_path).workspace
    agent = OracleAgent()
    agent.start(ctx_for(mini["K"], ws, tmp_path, key=False))
    res = agent.run()
    assert res.stop_reason == "submitted" and any("needs the task's answer key" in e for e in res.extra["errors"])
    assert repo.worktree_diff(ws) == ""
