"""Rule 7: the prober simulated against the grader's comparison; a small-space family is rejected."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sdebench.generation.facts import FactSpace, integer_space, uniform
from sdebench.generation.generate import generate, load_generator
from sdebench.generation.probe import (
    _base,
    analyse,
    build_model,
    decode_rows,
    probe_family,
    resolve_submits,
    run_candidates,
    signature,
    skeleton,
    stable_modules,
    submits_to_resolve,
)
from sdebench.grading.rules import observations_match
from sdebench.sandbox import make_factory

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
    assert res.classes == 614 and res.size == 617
    # The figures pinned (the prober replayed per truth before the search was shared as a tree).
    assert res.resolve["binary"] == 0 and res.fact_submit == dict.fromkeys(("binary", "counts", "tests"))
    assert res.resolve["counts"] == res.resolve["tests"] == pytest.approx(3 / len(gen.space.draw))


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


def naive_failing(model, c, h):
    """The comparison spelled out: every instance of both runs looked at."""
    exp, got = model.enc[h], model.enc[c]
    bad = {_base(i) for i in exp if i not in got or not model._ok(i, h, c)}
    bad |= {_base(i) for i in got if i not in exp}
    return tuple(b for b in model.hidden if b in bad), tuple(b for b in model.visible if b in bad)


def naive_resolvers(model, c):
    tolerant = {i for (i, k), t in model._tolerant.items() if t}
    key = {h: tuple(sorted((i, o, v) for i, (o, v) in enc.items() if i not in tolerant)) for h, enc in enumerate(model.enc)}
    return [h for h in range(len(model.runs)) if key[h] == key[c] and (h == c or not any(naive_failing(model, c, h)))]


def random_model(seed: int):
    """Candidates observing ints, near-equal floats, Decimals and checks over hidden and visible tests."""
    rng = random.Random(seed)
    hidden = [f"tests/test_h.py::test_{k}" for k in "abcd"]
    visible = ["tests/test_v.py::test_v"]
    runs = []
    for _ in range(40):
        run = {
            hidden[0]: ("passed", [["int", str(rng.randint(0, 3))]]),
            hidden[1]: ("passed", [["float", repr(rng.choice([1.0, 1.0 + 1e-9, 1.5, 2.0]))]]),
            hidden[2]: ("passed", [["list", [["Decimal", rng.choice(["1.0", "1.00", "1.1", "-0", "0"])]]]]),
            visible[0]: ("passed", [["check", rng.random() > 0.1]]),
            "tests/test_x.py::test_other": ("passed", [["int", str(rng.randint(0, 1))]]),
        }
        if rng.random() > 0.2:
            run[hidden[3] + f"[{rng.randint(0, 1)}]"] = ("passed", [["str", rng.choice("xy")]])
        runs.append(run)
    weights = [rng.choice([1.0, 2.0, 10.0]) for _ in runs]
    space = FactSpace(tuple(enumerate(weights)), uniform(range(len(runs))))
    return build_model(space, runs, hidden, visible)


@pytest.mark.parametrize("seed", range(4))
def test_the_indexed_comparisons_and_the_shared_replay_are_the_plain_ones(seed):
    model = random_model(seed)
    n = len(model.runs)
    assert n > 10 and model.inadmissible
    for c in range(n):
        assert [model.failing(c, h) for h in range(n)] == [naive_failing(model, c, h) for h in range(n)]
        assert model.failures(c) == [naive_failing(model, c, h) for h in range(n)]
        assert model.resolvers(c) == naive_resolvers(model, c)
    for policy in ("binary", "counts", "tests"):
        for submits in (1, 3, 6):
            at = resolve_submits(model, range(n), policy, submits)
            assert at == {t: submits_to_resolve(model, t, policy, submits) for t in range(n)}


def test_observations_that_match_share_their_skeleton():
    values = [[["float", "1.0"]], [["float", "1.0000000001"]], [["float", "2.5"]], [["Decimal", "1.0"]],
              [["Decimal", "1.00"]], [["Decimal", "-0"]], [["Decimal", "0.0"]], [["Decimal", "NaN"]],
              [["dict", [[["str", "k"], ["float", "3.0"]]]]], [["tuple", [["Decimal", "2"], ["int", "2"]]]],
              [["tuple", [["Decimal", "2.0"], ["int", "2"]]]], [["int", "1"]], [["bool", True]]]
    for a in values:
        for b in values:
            if observations_match(a, b):
                assert skeleton(a) == skeleton(b), (a, b)
    assert skeleton([["Decimal", "1.1"]]) != skeleton([["Decimal", "1.10000001"]])


def test_an_observation_list_sent_once_is_shared_by_the_runs_that_report_it():
    rows = [{"i": 0, "r": {"t::a": ["passed", 0]}, "new": {"t::a": {"0": [["int", "1"]]}}},
            {"i": 1, "r": {"t::a": ["failed", 0]}, "new": {}},
            {"i": 2, "r": {"t::a": ["passed", 1]}, "new": {"t::a": {"1": [["int", "2"]]}}}]
    runs = decode_rows(rows)
    assert [r["t::a"][0] for r in runs] == ["passed", "failed", "passed"]
    assert runs[0]["t::a"][1] is runs[1]["t::a"][1] and runs[2]["t::a"][1] == [["int", "2"]]


def test_stable_modules_follow_the_static_import_graph():
    tree = {"pkg/__init__.py": "", "pkg/util.py": "import math\n", "pkg/core.py": "from . import cand\n",
            "pkg/cand.py": "X = 1\n", "pkg/uses_core.py": "from pkg.core import *\n",
            "pkg/lazy.py": "def f():\n    from .util import g\n",
            "pkg/dyn.py": "import importlib\nM = importlib.import_module('pkg.util')\n",
            "pkg/sub/__init__.py": "from ..cand import X\n", "pkg/sub/leaf.py": "Y = 2\n",
            "tests/test_x.py": "from pkg import util\n"}
    changing = {"pkg/cand.py", "tests/test_x.py"}
    assert stable_modules(tree, changing) == ["pkg", "pkg.lazy", "pkg.util"]
    # A package whose __init__ imports the candidate takes every module under it along.
    assert stable_modules({"pkg/__init__.py": "from .cand import X\n", "pkg/util.py": ""}, {"pkg/cand.py"}) == []


STATEFUL = {"pkg/__init__.py": "", "pkg/registry.py": "ITEMS = []\nLIMIT = 3\n\n\nclass Counter:\n    n = 0\n",
            "pkg/cand.py": "from pkg import registry\n"}


@pytest.mark.parametrize("registers", [False, True])
def test_a_kept_module_changed_by_one_candidate_is_fresh_for_the_next(tmp_path, registers):
    # A test rebinds a global of a kept module; with `registers`, every candidate also registers
    # itself in it at import (a mutated list and class): each candidate must still see the module
    # as imported, as if it ran alone.
    register = "registry.ITEMS.append({v})\nregistry.Counter.n += 1\n" if registers else ""
    renders = [{"pkg/cand.py": "from pkg import registry\n" + register.format(v=v) + f"VALUE = {v}\n"}
               for v in range(3)]
    tests = {"tests/test_obs.py": "from pkg import cand, registry\n\n\ndef test_items(observe):\n"
             "    observe([registry.LIMIT, list(registry.ITEMS), registry.Counter.n, cand.VALUE])\n"
             "    registry.LIMIT = 99\n\n\ndef test_limit(observe):\n    observe(registry.LIMIT)\n"}
    assert "pkg.registry" in stable_modules({**STATEFUL, **tests}, {"pkg/cand.py", *tests})
    runs = run_candidates(make_factory(SANDBOX), tmp_path, STATEFUL, renders, tests)
    for v, run in enumerate(runs):
        items = [["int", str(v)]] if registers else []
        seen = [["int", "3"], ["list", items], ["int", str(int(registers))], ["int", str(v)]]
        assert run["tests/test_obs.py::test_items"] == ("passed", [["list", seen]])
        assert run["tests/test_obs.py::test_limit"] == ("passed", [["int", "99"]])


def test_near_equal_floats_are_found_without_comparing_every_pair():
    # Many candidates with the same skeleton whose floats are far apart, near-equal (within the
    # grading's tolerance, on either side of it) or equal: the searched neighbours give the plain answer.
    rng = random.Random(7)
    hidden = ["tests/test_h.py::test_a", "tests/test_h.py::test_b"]
    base = [rng.uniform(-1e3, 1e3) for _ in range(30)] + [0.0, 1e-13, 5e-13]
    values = base + [v * (1 + rng.choice([5e-7, 1e-6, 2e-6, -9e-7])) for v in base[:20]]
    runs = [{hidden[0]: ("passed", [["float", repr(v)]]),
             hidden[1]: ("passed", [["list", [["float", repr(round(v, 1))], ["int", "1"]]]])} for v in values]
    space = FactSpace(tuple((k, 1.0) for k in range(len(runs))), uniform(range(len(runs))))
    model = build_model(space, runs, hidden, [])
    assert len(model.runs) > 40
    shared = [c for c in range(len(model.runs)) if len(model.resolvers(c)) > 1]
    assert shared, "some candidates must resolve each other"
    for c in range(len(model.runs)):
        assert model.resolvers(c) == naive_resolvers(model, c)
