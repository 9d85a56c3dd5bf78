"""The grading rules: path classes, outcomes, and how observations are encoded and compared."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from sdebench.grading import rules
from sdebench.grading._runner import Observer, safe_encode


def test_outcome_of_parametrized_ids():
    tests = {"t.py::a[1]": "passed", "t.py::a[2]": "skipped", "t.py::b": "passed"}
    assert rules.outcome_of(tests, "t.py::a") == "skipped"
    assert rules.outcome_of(tests, "t.py::b") == "passed"
    assert rules.outcome_of(tests, "t.py::c") == "missing"


@pytest.mark.parametrize("value", [None, True, 3, 2.5, "x", b"\x00", Decimal("1.20"), datetime.date(2024, 1, 2),
                                   datetime.datetime(2024, 1, 2, 3), datetime.timedelta(days=1, seconds=2),
                                   [1, (2, "a")], {"k": {1, 2}}, frozenset({3})])
def test_plain_values_encode_and_match_themselves(value):
    enc = safe_encode(value)
    assert rules.is_plain_encoding(enc) and rules.values_match(enc, safe_encode(value))


def test_types_are_strict():
    class Liar(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    assert safe_encode(Liar(3))[0] == "unplain"
    assert not rules.values_match(safe_encode(3), safe_encode(Liar(3)))
    assert not rules.values_match(safe_encode(7.0), safe_encode(7))
    assert not rules.values_match(safe_encode(datetime.date(2024, 1, 2)), safe_encode(datetime.datetime(2024, 1, 2)))
    assert not rules.values_match(safe_encode([1]), safe_encode((1,)))
    assert safe_encode(object())[0] == "unplain"


def test_floats_within_approx_and_decimals_by_value():
    assert rules.values_match(safe_encode(0.1 + 0.2), safe_encode(0.3))
    assert not rules.values_match(safe_encode(0.3), safe_encode(0.3001))
    assert rules.values_match(safe_encode(Decimal("10.0")), safe_encode(Decimal("10.00")))
    assert not rules.values_match(safe_encode(Decimal("10.0")), safe_encode(Decimal("10.01")))
    assert rules.values_match(safe_encode(float("nan")), safe_encode(float("nan")))


def test_the_observer_judges_only_plain_data():
    sink: list = []
    obs = Observer(sink)

    class Always:
        def __eq__(self, other):
            return True

    obs.compare(1, "<", 2, "<", 3)
    obs.compare(Always(), "==", 5)
    obs.truth([])
    obs.truth([], False)
    with obs.raises():
        raise KeyError("x")
    with obs.raises():
        pass
    assert sink == [["check", True], ["unplain", f"{Always.__module__}.{Always.__qualname__}"], ["check", False],
                    ["check", True], ["raises", "builtins.KeyError"], ["raises", None]]


def test_observed_verdict_needs_every_instance_passed_and_matching():
    expected = {"t.py::a[1]": [["int", "1"]], "t.py::a[2]": [["int", "2"]]}
    good = {"t.py::a[1]": ("passed", [["int", "1"]]), "t.py::a[2]": ("passed", [["int", "2"]])}
    assert rules.observed_verdict(expected, good, "t.py::a")
    assert not rules.observed_verdict(expected, {**good, "t.py::a[2]": ("failed", [["int", "2"]])}, "t.py::a")
    assert not rules.observed_verdict(expected, {"t.py::a[1]": good["t.py::a[1]"]}, "t.py::a")
    assert not rules.observed_verdict(expected, {**good, "t.py::a[3]": ("passed", [])}, "t.py::a")


def test_path_classes():
    declared = frozenset({"checks/spec_rules.py"})
    assert rules.is_test_path("tests/helpers/data.json") and rules.is_test_path("checks/spec_rules.py", declared)
    assert not rules.is_test_path("pkg/testing.py")
    assert rules.is_protected("sub/tox.ini") and rules.is_protected("pkg/conftest.py")
    assert rules.is_source("pkg/rates.json") and not rules.is_source("docs/adr.md")
    assert rules.top_level_names(["pkg/a/b.py", "mod.py", "docs/x.md", "data/x.json"]) == {"pkg", "mod"}
