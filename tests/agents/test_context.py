"""What an agent receives: the public view of the task, and the answer key only for reference agents.

An in-process agent captures the real AgentContext of real episodes (every delivery, a committed
task, the bubblewrap sandbox) and everything reachable from it through public attributes is
searched for what would name the task or give the answer away; its commands look too.
"""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any

import pytest

from sdebench.agents.base import AgentContext, AnswerKey, Capabilities, RunResult, Usage
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks"
TASK = "billing-rounding-v0-K"
PROBE = "pwd; ls -la ..; env; git config --list --show-origin; git log --all --format='%H %B'; git reflog; git remote -v"


class Recorder:
    """A non-reference agent: keeps its context and what a look around its workspace showed."""

    name = "recorder"
    capabilities = Capabilities()

    def __init__(self):
        self.usage = Usage()
        self.ctx: AgentContext | None = None
        self.seen = ""

    def start(self, ctx: AgentContext) -> None:
        self.ctx = ctx

    def run(self) -> RunResult:
        self.seen = self.ctx.toolbox.call("bash", {"command": PROBE}).output
        self.ctx.toolbox.call("submit", {})
        return RunResult("submitted", turns=2)

    def feedback(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


class AnswerKeyRecorder(Recorder):
    capabilities = Capabilities(needs_answer_key=True)


def public_strings(obj: Any, where: str = "ctx", seen: set[int] | None = None):
    """(where, text) for every string reachable from `obj` through public attributes, properties,
    items and keys (methods are not followed)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (int, float, bool, type(None), bytes, types.ModuleType, type)):
        return
    seen.add(id(obj))
    if isinstance(obj, (str, Path)):
        yield where, str(obj)
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from public_strings(k, f"{where}[key]", seen)
            yield from public_strings(v, f"{where}[{k!r}]", seen)
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            yield from public_strings(v, f"{where}[{i}]", seen)
        return
    for name in dir(obj):
        if name.startswith("_"):
            continue
        static = getattr(type(obj), name, None)
        if callable(static) and not isinstance(static, property):
            continue  # a method
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a property that cannot be read carries nothing
            continue
        if callable(value) and not dataclasses.is_dataclass(value):
            continue
        yield from public_strings(value, f"{where}.{name}", seen)


@pytest.fixture(scope="module")
def task():
    return load(TASKS / TASK)


def episode(task, delivery: str, agent: Recorder, tmp_path: Path):
    cfg = {"agent": {"name": "recorder"}, "model": {"name": "none"}, "delivery": {"name": delivery}, "seed": 0,
           "max_interventions": 0, "limits": {}}
    factory = make_factory({"backend": "local", "tasks_dir": str(TASKS), "results_dir": str(tmp_path / "results")})
    traj = tmp_path / "results" / task.id / "t.jsonl"
    try:
        rec = run_episode(task, cfg, factory, agent=agent, trajectory_path=traj)
    finally:
        factory.cleanup()
    assert rec.outcome.error is None and len(rec.attempts) == 1, rec.outcome.error
    return rec


@pytest.mark.bwrap
@pytest.mark.parametrize("delivery", ["full", "squashed", "memtool", "inject", "oracle"])
def test_a_non_reference_agent_gets_only_the_public_view(task, delivery, tmp_path):
    agent = Recorder()
    episode(task, delivery, agent, tmp_path)
    ctx = agent.ctx
    assert [f.name for f in dataclasses.fields(ctx)] == [
        "statement", "prompt_additions", "toolbox", "trajectory", "limits", "seed", "started_at", "answer_key",
        "sandbox"]
    assert ctx.answer_key is None and ctx.sandbox is None and ctx.statement == task.statement
    assert set(ctx.toolbox.names()) >= {"bash", "read_file", "submit"}
    forbidden = {"task id": task.id, "family": task.family, "task store": str(TASKS), "results dir": str(tmp_path),
                 "oracle patch": task.oracle_patch, "conventional patch": task.conventional_patch}
    if delivery != "oracle":  # the oracle delivery exists to push the fact into the prompt
        forbidden["fact"] = task.fact
    found = [(what, where) for where, text in public_strings(ctx) for what, bad in forbidden.items() if bad in text]
    assert found == []
    # nor may the agent's commands find them: the workspace path, git metadata, environment
    assert agent.seen.startswith("exit code: 0")
    assert [what for what, bad in forbidden.items() if bad in agent.seen] == []
    for word in (task.id, task.family, "tasks/"):
        assert word not in agent.seen, word


@pytest.mark.bwrap
def test_the_answer_key_goes_only_to_agents_that_ask_for_it(task, tmp_path):
    agent = AnswerKeyRecorder()
    episode(task, "squashed", agent, tmp_path)
    assert agent.ctx.answer_key == AnswerKey.of(task)
    assert agent.ctx.answer_key.oracle_patch == task.oracle_patch and task.fact_tokens == agent.ctx.answer_key.fact_tokens
