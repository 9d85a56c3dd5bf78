"""The one definition of resolve@1, resolve@cap, interventions and their intervals."""

import pytest

from sdebench.runs import results, rules
from tests.helpers import record


def test_an_episode_ended_by_a_limit_counts_at_the_cap_everywhere():
    limited = record(resolved=False, interventions=1, max_interventions=5, stop_reason="max_turns")
    first = record(resolved=True, interventions=0, resolved_at=1, stop_reason="resolved")
    third = record(resolved=True, interventions=2, resolved_at=3, stop_reason="resolved")
    assert [rules.counted_interventions(r) for r in (limited, first, third)] == [5, 0, 2]
    assert [rules.resolved_first(r) for r in (limited, first, third)] == [False, True, False]
    (row,) = results.summarize([limited, first, third])
    assert row["interventions_capped"] == 7 / 3  # the summary agrees with the tables
    assert row["resolved_1"] == 1 and row["resolved"] == 2
    from sdebench.analysis import tables

    cell = tables.by_cell(results.frame([limited, first, third])).iloc[0]
    assert cell["interventions_capped"] == 7 / 3 and cell["resolve_1"] == 1 / 3
    assert cell["resolve_1_lo"] < 1 / 3 < cell["resolve_1_hi"]
    md = results.markdown([row])
    assert "resolve@1" in md and "1/3 = 0.33 [" in md


def test_wilson_interval():
    lo, hi = rules.wilson(5, 10)
    assert round(lo, 3) == 0.237 and round(hi, 3) == 0.763  # the textbook figures for 5/10
    assert rules.wilson(0, 0) == (0.0, 1.0) and rules.wilson(0, 20)[0] == 0.0


def test_old_records_derive_resolved_at_from_attempts():
    def attempt(n, ok):
        return {"attempt": n, "stop_reason": "submitted", "turns": 1, "resolved": ok, "counts": {}, "pass_ratio": 1.0,
                "guards": [], "grade_error": None, "grade_s": 0.1}

    old = record(resolved=True, interventions=1, attempts=[attempt(1, False), attempt(2, True)])
    assert rules.resolved_at(old) == 2


def test_task_set_names_the_set_and_its_scale():
    assert rules.task_set(record()) == rules.PUBLISHED == "published"
    assert rules.task_set(record(set_digest="fresh1:" + "0f" * 32, memory_scale=None)) == "fresh:0f0f0f0f0f0f"
    assert rules.task_set(record(memory_scale="large")) == "published@large"


def test_feedback_policy_defaults_to_binary_for_old_records():
    assert rules.feedback_policy(record()) == "binary"
    assert rules.feedback_policy(record(feedback_hidden="counts")) == "counts"


def test_rules_take_typed_records_and_frame_rows_become_records():
    import pandas as pd

    assert rules.is_error(record(stop_reason="error")) and not rules.is_error(record(stop_reason="max_turns"))
    # a frame row becomes a record first (results.records): a missing or NaN value takes its default
    df = pd.DataFrame({"stop_reason": ["error", "resolved", float("nan"), None],
                       "feedback_hidden": ["counts", float("nan"), None, "tests"],
                       "set_digest": [float("nan"), "fresh1:" + "ab" * 32, None, None],
                       "max_interventions": [3, float("nan"), 2, 5], "resolved": [False, True, False, False]})
    recs = results.records(df)
    assert [rules.is_error(r) for r in recs] == [True, False, False, False]  # NaN-safe
    assert [rules.feedback_policy(r) for r in recs] == ["counts", "binary", "binary", "tests"]
    assert [rules.task_set(r) for r in recs] == ["published", "fresh:abababababab", "published", "published"]
    assert [r.outcome.max_interventions for r in recs] == [3, None, 2, 5]  # an int again, not 3.0
    assert [rules.counted_interventions(r) for r in recs] == [None, 0, 2, 5]
    with pytest.raises(AttributeError):
        rules.is_error({"stop_reason": "error"})  # one type: a dict is no record


def test_an_errored_episode_is_no_unresolved_outcome():
    errored = record(resolved=False, interventions=0, max_interventions=5, stop_reason="error", error="server down")
    assert rules.counted_interventions(errored) is None  # not the cap: it has no outcome
    resolved = record(resolved=True, interventions=0, resolved_at=1, stop_reason="resolved")
    unresolved = record(resolved=False, interventions=5, max_interventions=5, stop_reason="max_interventions")
    recs = [resolved, resolved, unresolved, errored]
    # the summary and the tables agree: 2/3 resolved, 1 error beside it
    (row,) = results.summarize(recs)
    from sdebench.analysis import tables

    cell = tables.by_cell(results.frame(recs)).iloc[0]
    assert (row["episodes"], row["errors"], row["resolve_rate"]) == (cell["episodes"], cell["errors"], 2 / 3) == (3, 1, 2 / 3)
    assert row["interventions_capped"] == cell["interventions_capped"] == 5 / 3


def test_rate_ci_without_episodes_has_no_rate():
    assert rules.rate_ci(0, 0) == "0/0"
    assert rules.rate_ci(2, 3).startswith("2/3 = 0.67 [")
