"""Rule 7: the prober simulated against the grader's comparison; a small-space family is rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdebench.generation.facts import FactSpace, integer_space, uniform
from sdebench.generation.generate import generate, load_generator
from sdebench.generation.probe import analyse, build_model, probe_family, signature, submits_to_resolve

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = {"backend": "unsafe_local"}
HIDDEN = ["tests/test_hidden.py::test_a", "tests/test_hidden.py::test_b"]


def run_of(a, b):
    """A candidate's observations: test_a observes `a`, test_b observes `b`."""
    return {HIDDEN[0]: ("passed", [["int", str(a)]]), HIDDEN[1]: ("passed", [["int", str(b)]])}


def test_binary_prober_tries_candidates_in_prior_order():
    space = FactSpace(((1, 10.0), (2, 5.0), (3, 1.0)), uniform([2, 3]))
    runs = [run_of(v, v) for v in (1, 2, 3)]
    res = analyse("toy", 0, space, 3, runs, HIDDEN, [], submits=2)
    assert res.fact_submit["binary"] is None  # 1 then 2: fact 3 needs a third submit
    assert res.resolve["binary"] == pytest.approx(0.5)  # fact 2 is reached at submit 2
    assert any("50.0%" in v for v in res.violations())


def test_counts_feedback_narrows_the_search():
    # test_a separates {1, 2} from {3, 4}; a failing submit's count tells which half holds the fact.
    space = FactSpace(((1, 4.0), (2, 3.0), (3, 2.0), (4, 1.0)), uniform([1, 2, 3, 4]))
    runs = [run_of(v < 3, v) for v in (1, 2, 3, 4)]
    model = build_model(space, runs, HIDDEN, [])
    fact_3 = 2  # the class of candidate 3
    assert submits_to_resolve(model, fact_3, "binary", 4) == 3
    # Submit 1 (candidate 1) fails both tests against 3 or 4 (count 2), one against 2: only 3, 4 remain.
    assert submits_to_resolve(model, fact_3, "counts", 4) == 2
    assert signature("counts", ["x"], []) == (1, 0) and signature("binary", [], []) is None


def test_a_candidate_failing_its_own_tests_is_never_submitted():
    space = FactSpace(((1, 10.0), (2, 1.0)), uniform([2]))
    runs = [{HIDDEN[0]: ("failed", [])}, run_of(2, 2)]
    res = analyse("toy", 0, space, 2, runs, HIDDEN, [], submits=1)
    assert res.fact_submit["binary"] == 1


def test_the_space_must_hold_every_drawable_fact():
    space = FactSpace(((1, 1.0),), uniform([1, 9]))
    res = analyse("toy", 0, space, 1, [run_of(1, 1)], HIDDEN, [], submits=6)
    assert any("outside its space" in v for v in res.violations())


def test_integer_space_holds_conventions_draw_and_neighbours():
    s = integer_space((300, 600), 301, 310, lambda n: n % 2 == 1, margin=2)
    assert s.values()[:2] == [300, 600] and s.prior()[300] > s.prior()[305]
    assert {299, 311, 312} <= set(s.values()) and not s.outside_draw()
    assert {v for v, _ in s.draw} == {301, 303, 305, 307, 309}


@pytest.mark.slow
def test_a_declared_family_passes_with_figures_under_every_policy():
    gen = load_generator(ROOT / "generators" / "ttlcache.py")
    res = probe_family(gen, 0, SANDBOX)
    assert not res.violations(), res.violations()
    assert set(res.resolve) == {"binary", "counts", "tests"} and res.resolve["binary"] <= 0.05
    assert res.classes > 300


SMALL = '''
import dataclasses
from pathlib import Path
from sdebench.generation.facts import FactSpace, uniform
from sdebench.generation.generate import load_generator

TTL = load_generator(Path({root!r}) / "generators" / "ttlcache.py")
_fact = TTL.fact(0)
# A deliberately small space: the conventional five minutes and the two values next to the fact.
GENERATOR = dataclasses.replace(
    TTL, space=FactSpace(((300, 10.0), (_fact, 1.0), (_fact + 1, 1.0)), uniform([_fact, _fact + 1])))
'''


def test_rule_7_rejects_a_small_space_family(tmp_path):
    path = tmp_path / "gens" / "smallttl.py"
    path.parent.mkdir()
    path.write_text(SMALL.format(root=str(ROOT)))
    [outcome] = generate([(path, 0, "K")], tmp_path / "out", SANDBOX, workers=1, progress=False)
    assert not outcome.written and not (tmp_path / "out" / outcome.task_id).exists()
    rule7 = [v for v in outcome.violations if v.startswith("rule 7")]
    assert any("reaches the fact without memory at submit 2" in v for v in rule7), outcome.violations
    assert any("100.0% of the family's draws" in v for v in rule7), outcome.violations
