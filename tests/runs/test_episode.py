"""The episode loop with the real grader: outcomes, interventions, limits, errors, trajectory."""

from __future__ import annotations

import dataclasses

import pytest

from sdebench.agents.base import Capabilities, RunResult, Usage
from sdebench.agents.trajectory import read
from sdebench.runs.assemble import limits_from, run_episode
from sdebench.runs.config import settings
from sdebench.runs.episode import identity
from sdebench.sandbox import make_factory
from tests.minitask import build_all

SANDBOX = {"backend": "unsafe_local"}


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def cfg(agent: str, delivery: str = "squashed", **extra):
    return {"agent": {"name": agent}, "model": {"name": "none"}, "delivery": {"name": delivery}, "seed": 0,
            "max_interventions": 5, "limits": {"max_turns": 50, "max_cost_usd": 2.0, "max_wall_s": 600}, **extra}


def events(path, kind):
    return [e for e in read(path) if e["kind"] == kind]


@pytest.mark.parametrize("delivery", ["full", "squashed", "memtool", "inject", "oracle"])
def test_oracle_resolves_at_first_submit(mini, tmp_path, delivery):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(mini["K"], cfg("oracle", delivery), make_factory(SANDBOX), trajectory_path=traj)
    assert rec.outcome.error is None, rec.outcome.error
    assert rec.outcome.resolved and rec.outcome.interventions == 0 and rec.outcome.stop_reason == "resolved"
    assert len(rec.attempts) == 1
    counts = rec.attempts[0].counts
    assert counts["HIDDEN_TO_PASS"]["passed"] == counts["HIDDEN_TO_PASS"]["total"] == 2
    assert "+LOYALTY_RATE = 0.17" in rec.outcome.final_diff
    assert rec.usage.tool_calls == {"edit_file": 1, "submit": 1} and rec.usage.turns == 2
    assert rec.timing.wall_s >= rec.timing.grading_s + rec.timing.tools_s + rec.timing.model_s
    assert rec.timing.grading_s > 0 and rec.timing.setup_s > 0
    kinds = [e["kind"] for e in read(traj)]
    assert kinds[0] == "episode_start" and kinds[-1] == "episode_end" and "grade" in kinds
    assert {k: getattr(rec.identity, k) for k in ("task_id", "delivery", "agent", "model", "source")} == {
        "task_id": mini["K"].id, "delivery": delivery, "agent": "oracle", "model": "none", "source": "K"}


def test_conventional_ends_unresolved_after_exactly_five_interventions(mini, tmp_path):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(mini["F"], cfg("conventional"), make_factory(SANDBOX), trajectory_path=traj)
    assert rec.outcome.error is None
    assert not rec.outcome.resolved and rec.outcome.interventions == 5 and rec.outcome.stop_reason == "max_interventions"
    assert len(rec.attempts) == 6
    for a in rec.attempts:
        assert a.counts["FAIL_TO_PASS"] == {"passed": 1, "total": 1}
        assert a.counts["HIDDEN_TO_PASS"]["passed"] < a.counts["HIDDEN_TO_PASS"]["total"]
    assert rec.usage.tool_calls["submit"] == 6
    assert [a.grade_reused for a in rec.attempts] == [False] + [True] * 5  # unchanged resubmissions
    assert len(events(traj, "feedback")) == 5 and len(events(traj, "grade")) == 6
    assert all(e["text"] for e in events(traj, "feedback"))  # the failing output was fed back


def test_noop_never_resolves_and_the_cap_is_configurable(mini, tmp_path):
    rec = run_episode(mini["H"], cfg("noop", max_interventions=2, reuse_unchanged_grades=False), make_factory(SANDBOX))
    assert not rec.outcome.resolved and rec.outcome.interventions == 2 and len(rec.attempts) == 3
    assert not any(a.grade_reused for a in rec.attempts)
    assert all(a.guards == ["unchanged"] for a in rec.attempts)
    assert rec.outcome.final_diff == "" and rec.outcome.stop_reason == "max_interventions"
    assert rec.attempts[0].counts["FAIL_TO_PASS"]["passed"] == 0


class LimitAgent:
    """Hits the turn limit without submitting."""

    name = "limit"
    capabilities = Capabilities()

    def __init__(self):
        self.usage = Usage(model_calls=3, prompt_tokens=100, completion_tokens=20, cached_tokens=7, cost_usd=0.01, model_s=0.5)

    def start(self, ctx):
        self.ctx = ctx

    def run(self):
        self.ctx.toolbox.call("bash", {"command": "echo hi"})
        return RunResult("max_turns", turns=3)

    def feedback(self, text):
        raise AssertionError("no feedback after a limit")

    def close(self):
        pass


class CrashingAgent(LimitAgent):
    def run(self):
        raise RuntimeError("model exploded")


def test_a_limit_ends_the_episode_after_one_grade(mini, tmp_path):
    rec = run_episode(mini["K"], cfg("oracle"), make_factory(SANDBOX), agent=LimitAgent())
    assert rec.outcome.stop_reason == "max_turns" and rec.outcome.interventions == 0 and len(rec.attempts) == 1
    assert rec.usage.turns == 3 and rec.usage.tool_calls == {"bash": 1}
    assert (rec.usage.prompt_tokens, rec.usage.completion_tokens, rec.usage.cached_tokens, rec.usage.cost_usd) == (100, 20, 7, 0.01)
    assert rec.timing.model_s == 0.5


def test_exceptions_become_failed_episodes(mini, tmp_path):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(mini["K"], cfg("oracle"), make_factory(SANDBOX), agent=CrashingAgent(), trajectory_path=traj)
    assert rec.outcome.stop_reason == "error" and not rec.outcome.resolved and rec.outcome.error == "RuntimeError: model exploded"
    assert events(traj, "error")[0]["traceback"]
    bad = run_episode(mini["K"], cfg("patch"), make_factory(SANDBOX))
    assert bad.outcome.stop_reason == "error" and "agent.patch" in bad.outcome.error
    unknown = run_episode(mini["K"], cfg("oracle", "zip"), make_factory(SANDBOX))
    assert unknown.outcome.stop_reason == "error" and "unknown delivery" in unknown.outcome.error


def test_a_broken_task_is_a_failed_episode(mini, tmp_path):
    import shutil

    from sdebench.tasks.record import load

    broken_dir = tmp_path / "broken"
    shutil.copytree(mini["K"].path, broken_dir)
    (broken_dir / "repo.bundle").write_bytes(b"garbage")
    rec = run_episode(load(broken_dir), cfg("oracle"), make_factory(SANDBOX))
    assert rec.outcome.stop_reason == "error" and "RepoError" in rec.outcome.error


def test_workspace_is_removed_unless_kept(mini, tmp_path):
    rec = run_episode(mini["K"], cfg("oracle"), make_factory(SANDBOX), work_root=tmp_path, keep_workspace=True)
    assert (tmp_path / rec.storage.workspace).is_dir()
    run_episode(mini["K"], cfg("oracle"), make_factory(SANDBOX), work_root=tmp_path / "w2")
    assert list((tmp_path / "w2").iterdir()) == []


def test_identity_and_limits(mini):
    assert identity(mini["X"], settings(cfg("noop", seed=3))).seed == 3
    assert identity(mini["X"], settings(cfg("noop"))).competency == "recall"
    assert identity(dataclasses.replace(mini["X"], competency="scope"), settings(cfg("noop"))).competency == "scope"
    lim = limits_from(settings({"limits": {"max_turns": 7}}))
    assert lim.max_turns == 7 and lim.max_wall_s == 1800.0  # a key left out takes conf/config.yaml's value


class EditingAgent(LimitAgent):
    """Changes the file between submissions: every attempt is graded afresh."""

    def run(self):
        self.n = getattr(self, "n", 0) + 1
        rate = {1: "0.15", 2: "0.17"}[self.n]
        self.ctx.toolbox.call("bash", {"command": f"sed -i 's/^LOYALTY_RATE = .*/LOYALTY_RATE = {rate}/' shop/pricing.py"})
        self.ctx.toolbox.call("submit", {})
        return RunResult("submitted", turns=2)

    def feedback(self, text):
        self.fed = text


def test_a_changed_resubmission_is_graded_again_and_can_resolve(mini, tmp_path):
    agent = EditingAgent()
    rec = run_episode(mini["X"], cfg("oracle"), make_factory(SANDBOX), agent=agent)
    assert rec.outcome.resolved and rec.outcome.interventions == 1 and len(rec.attempts) == 2
    assert [a.grade_reused for a in rec.attempts] == [False, False]
    assert "HIDDEN_TO_PASS" in str(rec.attempts[0].counts) and agent.fed
    assert "+LOYALTY_RATE = 0.17" in rec.outcome.final_diff


@pytest.mark.docker
def test_episodes_in_docker_grade_a_copy_synced_out_of_the_container(mini, tmp_path):
    import os

    from sdebench.sandbox.docker import unavailable_reason

    image = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")
    reason = unavailable_reason(image)
    if reason:
        if os.environ.get("SDEBENCH_REQUIRE_DOCKER"):
            pytest.fail(f"docker backend unavailable: {reason}")
        pytest.skip(f"docker backend unavailable: {reason}")
    factory = make_factory({"backend": "docker", "image": image})
    try:
        ok = run_episode(mini["K"], cfg("oracle", "memtool"), factory)
        assert ok.outcome.error is None and ok.outcome.resolved and ok.outcome.interventions == 0
        assert "+LOYALTY_RATE = 0.17" in ok.outcome.final_diff
        conv = run_episode(mini["K"], cfg("conventional", max_interventions=2), factory)
        assert not conv.outcome.resolved and conv.outcome.interventions == 2
        assert [a.grade_reused for a in conv.attempts] == [False, True, True]
    finally:
        factory.cleanup()


class _GradingDown:
    """A backend whose grading sandboxes cannot start (the agent's own sandbox works)."""

    name = "grading-down"

    def __init__(self):
        self.inner = make_factory(SANDBOX)

    def open(self, workspace, read_only=False):
        from sdebench.sandbox import SandboxError

        if read_only:
            raise SandboxError("engine unreachable")
        return self.inner.open(workspace)

    def cleanup(self):
        pass


def test_a_grade_that_cannot_run_makes_the_episode_an_error_not_unresolved(mini, tmp_path):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(mini["K"], cfg("oracle"), _GradingDown(), trajectory_path=traj)
    assert rec.outcome.stop_reason == "error" and not rec.outcome.resolved
    assert "grading failed" in rec.outcome.error and "engine unreachable" in rec.outcome.error
    assert rec.outcome.interventions == 0 and rec.outcome.feedback == []


def test_records_carry_the_feedback_policy_and_the_trajectory_only_the_public_grade(mini, tmp_path):
    traj = tmp_path / "t.jsonl"
    rec = run_episode(mini["F"], cfg("conventional", max_interventions=1, grading={"feedback_hidden": "counts"}),
                      make_factory(SANDBOX), trajectory_path=traj)
    assert rec.outcome.feedback_hidden == "counts" and rec.outcome.error is None
    grades = events(traj, "grade")
    assert grades and all("held_out" in g and "tests" not in g for g in grades)
    assert "Held-out tests: " in rec.outcome.feedback[0]
    assert all("test_loyalty_rate" not in str(g) for g in grades)  # hidden ids never logged under counts


def test_a_bad_grading_option_is_an_error_record(mini, tmp_path):
    rec = run_episode(mini["K"], cfg("oracle", grading={"feedback_hidden": "all"}), make_factory(SANDBOX))
    assert rec.outcome.stop_reason == "error" and "feedback_hidden" in rec.outcome.error


def test_wall_time_parts_add_up_and_none_is_counted_twice(mini, tmp_path):
    """wall_s = setup + model + tools + grading + other, every part measured apart (none negative)."""
    rec = run_episode(mini["F"], cfg("conventional", max_interventions=2), make_factory(SANDBOX))
    parts = (rec.timing.setup_s, rec.timing.model_s, rec.timing.tools_s, rec.timing.grading_s, rec.timing.other_s)
    assert rec.outcome.error is None and len(rec.attempts) == 3
    assert rec.timing.setup_s > 0 and rec.timing.grading_s > 0 and rec.timing.tools_s > 0 and rec.timing.model_s == 0  # no model here
    assert all(p >= -0.001 for p in parts), parts  # a negative remainder would mean overlapping parts
    assert sum(parts) == pytest.approx(rec.timing.wall_s, abs=0.002)
    assert rec.timing.grading_s >= sum(a.grade_s for a in rec.attempts) - 0.002
