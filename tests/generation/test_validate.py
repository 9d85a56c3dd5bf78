import dataclasses

import pytest

from sdebench.generation import validate
from sdebench.generation.spec import Commit
from tests.helpers import billing_spec


@pytest.mark.parametrize(
    "text,tokens,found",
    [
        ("TTL is 417s here", ["417"], ["417"]),
        ("ttl 4170 ms", ["417"], []),
        ("id a417", ["417"], []),
        ("Rounds HALF-DOWN\nalways", ["half-down"], ["half-down"]),
        ("uses ROUND_HALF_DOWN", ["half_down"], []),
        ("uses ROUND_HALF_DOWN", ["round_half_down"], ["round_half_down"]),
        ("ties   go\n down", ["ties go down"], ["ties go down"]),
    ],
)
def test_find_tokens_boundaries(text, tokens, found):
    assert validate.find_tokens(text, tokens) == found


def test_clean_spec_passes_static_checks():
    for source in ("H", "K", "F", "X", "none"):
        spec = billing_spec(source)
        assert validate.check_placement(spec) == []
        assert validate.check_no_future_leak(spec) == []


def test_history_outside_h_is_a_leak():
    spec = billing_spec("K")
    commits = list(spec.commits)
    commits[1] = Commit("money: round toward zero now", commits[1].files)
    bad = validate.check_placement(dataclasses.replace(spec, commits=tuple(commits)))
    assert [v.rule for v in bad] == [1]
    assert "found in H" in str(bad[0])


def test_statement_must_not_state_the_fact():
    spec = billing_spec("none")
    bad = validate.check_placement(dataclasses.replace(spec, statement=spec.statement + " Round toward zero."))
    assert any("statement" in str(v) for v in bad)


def test_missing_fact_in_designated_source():
    spec = billing_spec("F")
    bad = validate.check_placement(dataclasses.replace(spec, source="X"))
    assert any("no fact token found in the designated source X" in str(v) for v in bad)
