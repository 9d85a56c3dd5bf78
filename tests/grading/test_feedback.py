"""What the agent is shown: composed from phase 1 and the policy's view of phase 2, nothing else."""

from __future__ import annotations

import inspect

import pytest

from sdebench.grading import feedback
from sdebench.grading.feedback import (
    HELD_OUT_FAIL,
    RESOLVED,
    compose,
    held_out_line,
    held_out_view,
    reward_of,
    shown_counts,
    visible_feedback,
)
from sdebench.grading.grade import TestOutcome as Outcome
from sdebench.grading.options import GradeOptions

OPTS = GradeOptions()
VISIBLE = [Outcome("t.py::a", "FAIL_TO_PASS", "failed", "E   assert 417 == 876 (HALF_DOWN, 7%)"),
           Outcome("t.py::b", "PASS_TO_PASS", "passed")]


@pytest.mark.parametrize("policy", ["binary", "counts", "tests"])
def test_the_view_says_what_the_policy_allows(policy):
    view = held_out_view(policy, ["h.py::x"], ["t.py::b"], 3)
    assert view["pass"] is False
    assert ("failed" in view) == (policy != "binary") and ("failing" in view) == (policy == "tests")
    line = held_out_line(policy, view)
    assert (line == HELD_OUT_FAIL) == (policy == "binary")
    assert ("h.py::x" in line) == (policy == "tests")
    assert held_out_line(policy, held_out_view(policy, [], [], 3)) is None
    # A phase 2 that did not finish cleanly passes nothing, whatever it reported.
    assert held_out_view(policy, [], [], 3, finished=False)["pass"] is False


def test_the_feedback_is_phase_1_plus_the_verdict_and_text_is_left_as_printed():
    vf = visible_feedback(VISIBLE, {}, None, ["removed added test or config file tests/test_417.py"], OPTS)
    text = compose(vf, False, HELD_OUT_FAIL, OPTS)
    assert text.startswith("Not resolved.") and HELD_OUT_FAIL in text
    assert "assert 417 == 876 (HALF_DOWN, 7%)" in text and "tests/test_417.py" in text
    assert compose(vf, True, None, OPTS) == RESOLVED
    # Only a fixed transform: control characters go, whatever the task.
    bad = visible_feedback([Outcome("t.py::a", "FAIL_TO_PASS", "failed", "x\x00y\udcff")], {}, None, [], OPTS)
    assert "xy?" in compose(bad, False, None, OPTS)


def test_nothing_secret_is_an_input():
    # The composition takes no task, fact, oracle or hidden test: there is nothing to key a transform on.
    for fn in (visible_feedback, compose, held_out_line, held_out_view, shown_counts, reward_of):
        params = set(inspect.signature(fn).parameters)
        assert not params & {"task", "tokens", "fact", "hidden", "expected", "hidden_sources"}, fn.__name__
    assert "fact_tokens" not in inspect.getsource(feedback)


def test_shown_counts_and_rewards_follow_the_view():
    binary = held_out_view("binary", ["h::1"], [], 2)
    counts = shown_counts(VISIBLE, binary, 2)
    assert counts["HIDDEN_TO_PASS"] == {"passed": 0, "total": 2} and counts["FAIL_TO_PASS"]["passed"] == 0
    assert shown_counts(VISIBLE, held_out_view("counts", ["h::1"], [], 2), 2)["HIDDEN_TO_PASS"]["passed"] == 1
    assert shown_counts(VISIBLE, held_out_view("binary", [], [], 2), 2)["HIDDEN_TO_PASS"]["passed"] == 2
    r = reward_of(counts, False, False, 0.1)
    assert r["binary"] == 0.0 and r["shaped_breakdown"]["regression_penalty"] == 0.0
    assert reward_of(counts, False, True, 0.1)["shaped"] == 0.0
