"""`--where` filters: any field name, negation, comma lists, literals, one-line errors."""

from __future__ import annotations

import pytest

from sdebench.runs import where
from tests.helpers import record

RECS = [record(key="1", agent="oracle", resolved=True, stop_reason="resolved"),
        record(key="2", agent="noop", stop_reason="max_interventions"),
        record(key="3", agent="llm", delivery="full", stop_reason="error", error="boom", competency="scope")]


def keys(*items):
    return [r.key for r in where.select(RECS, where.parse(items))]


def test_conditions_on_leaf_dotted_and_derived_names():
    assert keys("agent=oracle") == ["1"] == keys("identity.agent=oracle") == keys("outcome.resolved=True")
    assert keys("agent!=oracle") == ["2", "3"] and keys("agent=oracle,noop") == ["1", "2"]
    assert keys("tier=hard") == ["3"] and keys("stop_reason!=error", "agent!=oracle") == ["2"]
    assert keys("error=none") == ["1", "2"] and keys("stream_id=None") == ["1", "2", "3"]
    assert keys() == ["1", "2", "3"]


def test_unknown_fields_and_bad_items_are_one_line_errors():
    with pytest.raises(where.FilterError, match=r"unknown field 'agnt' \(did you mean 'agent'\?\)"):
        where.parse(["agnt=oracle"])
    with pytest.raises(where.FilterError, match="expected KEY=VALUE"):
        where.parse(["agent"])


def test_nothing_matching_is_said_readably():
    conds = where.parse(["agent=x", "delivery!=full"])
    assert where.nothing(conds, 3, ["r"]) == "no episodes match agent=x and delivery!=full (of 3 under r)"
    assert where.nothing([], 0, ["r"]) == "no episode records under r"
