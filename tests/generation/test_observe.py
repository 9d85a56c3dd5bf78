"""The mechanical rewrite of assert-style tests into observation tests, and the answer-leak check."""

from __future__ import annotations

import pytest

from sdebench.generation.observe import (
    TransformError,
    answers_in_source,
    is_literal,
    observation_source,
    source_texts,
    time_limit,
)

TEST = '''from decimal import Decimal

import pytest

from pkg import f, g


def test_values():
    assert f(1) == Decimal("1.20")
    assert f(2) == pytest.approx(3.5)
    assert f(3) == g(3)
    assert f(4) < 10
    assert not f(5)
    assert f(6) is None


def test_raises():
    with pytest.raises(ValueError, match="bad"):
        f(-1)


class TestGroup:
    def test_method(self):
        assert f(7) == [1, 2]
'''


def test_hidden_rewrite_drops_every_expected_value():
    out = observation_source(TEST, "hidden")
    for gone in ('"1.20"', "'1.20'", "3.5", "== ", "ValueError", "[1, 2]", "assert "):
        assert gone not in out, gone
    for kept in ("observe(f(1))", "observe(f(3))", "observe(g(3))", "observe(f(4))", "observe(f(5))", "observe(f(6))",
                 "with observe.raises(match='bad'):", "def test_values(observe):", "def test_method(self, observe):"):
        assert kept in out, kept


def test_visible_rewrite_keeps_each_assertion_whole():
    out = observation_source(TEST, "visible")
    assert "observe.compare(f(1), '==', Decimal('1.20'))" in out
    assert "observe.compare(f(4), '<', 10)" in out
    assert "observe.truth(f(5), False)" in out and "observe.compare(f(6), 'is', None)" in out
    compile(out, "t.py", "exec")


def test_a_test_may_observe_itself_and_asserts_outside_tests_are_refused():
    own = "def test_x(observe):\n    observe(1)\n    assert 2 == 2\n"
    assert observation_source(own, "hidden").count("observe") == 2  # its call kept, the literal assert dropped
    with pytest.raises(TransformError, match="outside a test function"):
        observation_source("def helper(x):\n    assert x == 1\n\n\ndef test_y():\n    helper(1)\n", "hidden")


@pytest.mark.parametrize(("expr", "literal"), [("3", True), ("Decimal('1.2')", True), ("[1, (2, 'a')]", True),
                                               ("-4.5 * 2", True), ("pytest.approx(x)", True), ("datetime(2024, 1, 2)", True),
                                               ("f(1)", False), ("x", False), ("Decimal(x)", False), ("CASES[0]", False)])
def test_literal_expressions(expr, literal):
    import ast

    assert is_literal(ast.parse(expr, mode="eval").body) is literal


def test_answers_spelled_out_in_a_source_are_found():
    src = observation_source('CASES = [("10.005", "10.00")]\n\ndef test_t():\n    assert f(1) == 2\n', "hidden")
    texts = source_texts(src)
    assert answers_in_source([["Decimal", "10.00"]], texts) == ["10.00"]
    assert answers_in_source([["Decimal", "10.01"], ["int", "2"], ["str", "10.00"]], texts) == []
    assert answers_in_source([["datetime", "2024-03-05T04:00:00"]], source_texts("START = datetime(2024, 3, 5, 4)\n"))


def test_time_limit_is_coarse_and_floored():
    assert time_limit([0.001, 0.2]) == 10.0
    assert time_limit([1.5]) == 16.0 and time_limit([]) == 10.0
