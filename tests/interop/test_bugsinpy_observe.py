"""The rewrite of imported tests into observation tests, and the host-side judging of their assertions
(run for real through the sdebench runner; unsafe_local for speed, the submission here is ours)."""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path

import pytest

from sdebench.grading.testrun import run_tests
from sdebench.interop.bugsinpy_checks import check_holds, literal_value
from sdebench.interop.bugsinpy_observe import RewriteError, rewrite
from sdebench.interop.bugsinpy_verifier import judged
from sdebench.sandbox import make_factory

PATH = "tests/test_solution.py"


def verdicts(tmp: Path, test: str, solution: str) -> dict[str, str]:
    """Rewrite `test`, run it against `solution` in observe mode, judge each test on the host."""
    rw = rewrite(test, PATH)
    ws = tmp / "repo"
    (ws / "tests").mkdir(parents=True)
    (ws / "solution.py").write_text(solution)
    (ws / PATH).write_text(rw.source)
    with make_factory({"backend": "unsafe_local"}).open(ws) as box:
        run = run_tests(box, [PATH], ["solution"], timeout=120, mode="observe")
    assert run.error is None and run.finished, run.output[-2000:]
    return {t.id.split("::", 1)[1]: t.outcome for t in judged(rw.table(), run)}


SOLUTION = '''
class Box:
    def __init__(self, v):
        self.v = v


class Same(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class Mega(ValueError, KeyError):
    pass


class Sub(ValueError):
    pass


def five():
    return 5.0


def none():
    return None


def box():
    return Box(3)


def same():
    return Same(1)


def raise_sub():
    raise Sub("deep trouble")


def raise_mega():
    raise Mega("anything")


def quiet():
    return 1
'''

TESTS = '''
import pytest
from solution import box, five, none, quiet, raise_mega, raise_sub, same


def test_int_equals_float():
    assert five() == 5


def test_short_circuit_skips_a_raising_operand():
    x = none()
    assert x is None or x.v == 3


def test_an_object_is_truthy_and_not_none():
    assert box()
    assert box() is not None
    assert box().v == 3


def test_an_object_never_compares():
    assert box() == box()


def test_always_equal_fails():
    assert same() == 2


def test_subclass_of_the_expected_exception():
    with pytest.raises(ValueError, match="deep"):
        raise_sub()


def test_an_exception_of_every_kind_is_none():
    with pytest.raises(KeyError):
        raise_mega()


def test_nothing_raised():
    with pytest.raises(ValueError):
        quiet()


def check(a, b):
    assert a == b


def test_via_a_helper():
    check(quiet(), 1)


def test_walrus_evaluated_in_place():
    assert (n := quiet()) == 1
    assert n + 1 == 2


ROWS = [(1, 1), (0, 0)]


def test_literal_rows():
    for want, got in ROWS:
        assert quiet() * got == want
'''


def test_judged_as_python_judges_plain_data(tmp_path):
    assert verdicts(tmp_path, TESTS, SOLUTION) == {
        "test_int_equals_float": "passed",
        "test_short_circuit_skips_a_raising_operand": "passed",
        "test_an_object_is_truthy_and_not_none": "passed",
        "test_an_object_never_compares": "failed",  # its __eq__ is the submission's: not trusted
        "test_always_equal_fails": "failed",
        "test_subclass_of_the_expected_exception": "passed",
        "test_an_exception_of_every_kind_is_none": "failed",  # two unrelated exception bases: no lineage
        "test_nothing_raised": "failed",
        "test_via_a_helper": "passed",
        "test_walrus_evaluated_in_place": "passed",
        "test_literal_rows": "passed",
    }
    assert verdicts(tmp_path / "wrong", TESTS.replace("ROWS = [(1, 1), (0, 0)]", "ROWS = [(1, 1), (1, 0)]"),
                    SOLUTION)["test_literal_rows"] == "failed"


def test_a_neutered_test_module_fails_every_test(tmp_path):
    """Observations that never arrive (the test module replaced, its checks skipped) are not a pass."""
    neuter = SOLUTION + '''
import sys, types
_m = types.ModuleType("test_solution")
exec("def test_int_equals_float():\\n    pass\\n", _m.__dict__)
sys.modules["test_solution"] = _m
'''
    got = verdicts(tmp_path, "from solution import five\n\n\ndef test_int_equals_float():\n    assert five() == 5\n", neuter)
    assert list(got) == ["test_int_equals_float"] and got["test_int_equals_float"] != "passed"


def test_literal_bindings_move_to_the_host_only_when_read_in_assertions_alone():
    src = '''
from solution import f

WANT = 3
SHARED = [1, 2]


def test_a():
    expected = {"k": 1}
    mutated = [1]
    mutated.append(2)
    assert f(SHARED) == WANT
    assert f(0) == expected
    assert f(1) == mutated
    assert SHARED == [1, 2]
'''
    rw = rewrite(src, PATH)
    assert "WANT" not in rw.source and "expected" not in rw.source and "{'k': 1}" not in rw.source
    assert "SHARED = [1, 2]" in rw.source and "mutated = [1]" in rw.source  # read as inputs: they stay
    rows = rewrite("from s import f\n\n\ndef test_a():\n    for x, want in [(1, 10), (2, 20)]:\n"
                   "        assert f(x) == want\n", PATH)
    assert "want" not in rows.source and "10" not in rows.source and rows.loops == {"0": [{"want": "10"}, {"want": "20"}]}
    lits = [c["expr"][1][2] for c in rw.checks.values()]
    assert lits[:2] == [["lit", "3"], ["lit", "{'k': 1}"]] and lits[2][0] == "leaf"


def test_sites_outside_functions_are_left_and_named():
    rw = rewrite("from __future__ import annotations\nassert 1 == 1\n\n\ndef test_x():\n    assert 2 == 2\n", PATH)
    assert rw.in_sandbox == ["line 2: assert outside a function"]
    assert rw.source.startswith("from __future__ import annotations\n")
    compile(rw.source, PATH, "exec")


def test_a_file_that_does_not_parse_is_one_clear_error():
    with pytest.raises(RewriteError, match=r"tests/test_solution.py does not parse: .*\(line 1\)"):
        rewrite("```python\ndef test_x(): pass\n```\n", PATH)


def test_a_test_without_any_assertion_is_excluded_and_removed():
    rw = rewrite("from s import f\n\n\ndef test_a():\n    f()\n\n\ndef test_b():\n    assert f() == 1\n", PATH)
    assert rw.excluded == {f"{PATH}::test_a": "holds no assertion the host can judge"}
    assert list(rw.tests) == [f"{PATH}::test_b"] and "def test_a" not in rw.source


def test_literal_evaluation_is_bounded():
    assert literal_value(ast.parse("Decimal('1.20') + 1", mode="eval").body) == Decimal("2.20")
    for big in ("'x' * 10 ** 9", "2 ** 10 ** 6", "[0] * 10 ** 8"):
        with pytest.raises(ValueError):
            literal_value(ast.parse(big, mode="eval").body)
    with pytest.raises(ValueError):
        literal_value(ast.parse("open('/etc/passwd')", mode="eval").body)


def test_malformed_events_fail_their_check():
    check = {"kind": "check", "expr": ["cmp", [["leaf", 0], "==", ["lit", "1"]]], "leaves": 1}
    assert check_holds(check, [["tuple", [["str", "v"], ["int", "1"]]]])
    for bad in ([], [["int", "1"]], [["tuple", [["str", "v"], ["unplain", "x"]]]], [["tuple", [["str", "e"]]]],
                [["tuple", [["str", "o"], ["bool", True]]]]):
        assert not check_holds(check, bad), bad
