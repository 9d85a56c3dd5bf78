"""Assembling an episode apart from its loop: the grade options reach the grader once, as the typed
object; an agent that does not offer what the episode needs is a one-line error record; a failed
assembly still releases what it opened."""

from __future__ import annotations

import pytest

from sdebench.agents.base import Capabilities, RunResult, Usage
from sdebench.agents.trajectory import read
from sdebench.grading.grade import grade_two_phase
from sdebench.grading.options import GradeOptions, OptionError
from sdebench.runs.assemble import build
from sdebench.sandbox import make_factory
from tests.minitask import build_all
from tests.runs.test_episode import cfg

SANDBOX = {"backend": "unsafe_local"}


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def test_the_grader_gets_the_options_object_built_once(mini, tmp_path):
    seen = []

    def grader(task, workspace, factory, **options):
        seen.append(options)
        return grade_two_phase(task, workspace, factory, **options)

    ep = build(mini["K"], cfg("oracle", grading={"feedback_hidden": "counts", "per_test_chars": 900}),
               make_factory(SANDBOX), grader=grader, work_root=tmp_path)
    assert not ep.failed and ep.grading is not None
    rec = ep.run()
    assert rec.outcome.resolved and rec.outcome.feedback_hidden == "counts"
    assert len(seen) == 1 and list(seen[0]) == ["options"]
    opts = seen[0]["options"]
    assert isinstance(opts, GradeOptions) and opts is ep.grading.options
    assert (opts.feedback_hidden, opts.per_test_chars) == ("counts", 900)
    assert list(tmp_path.iterdir()) == []  # the loop's end released the workspace


def test_a_grader_takes_the_object_or_keywords_not_both():
    opts = GradeOptions(feedback_hidden="tests")
    assert GradeOptions.given(opts, {}) is opts
    assert GradeOptions.given(None, {"feedback_hidden": "counts"}).feedback_hidden == "counts"
    with pytest.raises(OptionError, match="not both"):
        GradeOptions.given(opts, {"timeout": 3})


class Undeclared:
    """Acts like an agent but declares nothing, and has no close()."""

    name = "undeclared"

    def __init__(self):
        self.usage = Usage()

    def start(self, ctx):
        pass

    def run(self):
        return RunResult("submitted")

    def feedback(self, text):
        pass


class SandboxedWithoutMounts(Undeclared):
    capabilities = Capabilities(runs_in_sandbox=True)

    def close(self):
        pass


@pytest.mark.parametrize(("agent", "message"), [
    (Undeclared, "agent Undeclared declares no capabilities"),
    (SandboxedWithoutMounts, "agent SandboxedWithoutMounts lacks sandbox_mounts"),
])
def test_an_agent_lacking_what_it_declares_is_an_error_record(mini, tmp_path, agent, message):
    traj = tmp_path / "t.jsonl"
    ep = build(mini["K"], cfg("oracle"), make_factory(SANDBOX), agent=agent(), trajectory_path=traj,
               work_root=tmp_path / "w")
    assert ep.failed and ep.sandbox is None  # checked before the sandbox opens
    rec = ep.run()
    assert rec.outcome.stop_reason == "error" and message in rec.outcome.error and "\n" not in rec.outcome.error
    assert rec.attempts == [] and list((tmp_path / "w").iterdir()) == []
    kinds = [e["kind"] for e in read(traj)]
    assert kinds == ["episode_start", "error", "episode_end"]
