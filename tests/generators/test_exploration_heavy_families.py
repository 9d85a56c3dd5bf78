"""The exploration-heavy families: placement rules, size knob, memory distractors (no test runs)."""

from __future__ import annotations

import pytest

from sdebench.generation import validate
from sdebench.generation.generate import load_generator
from sdebench.tasks.artifacts import SOURCES, artifact_kind

from ..helpers import ROOT

FAMILIES = ("inventory_reorder", "log_sampling", "retry_backoff", "role_precedence", "title_boost",
            "keepalive_limit")


def gen(name):
    """The GENERATOR of a family module."""
    return load_generator(ROOT / "generators" / f"{name}.py")


def build_sized(name):
    """The family's size knob."""
    return gen(name).build_sized


@pytest.mark.parametrize("name", FAMILIES)
def test_every_placement_passes_the_static_rules(name):
    g = gen(name)
    assert g.bottleneck == "exploration-heavy"
    for source in SOURCES:
        spec = g.build(0, source)
        assert validate.check_structure(spec, g.family, 0, source) == []
        assert validate.check_placement(spec) == []
        assert validate.check_no_future_leak(spec) == []
        assert validate.check_determinism(spec, g.build(0, source)) == []


@pytest.mark.parametrize("name", FAMILIES)
def test_variants_differ_in_fact_and_code(name):
    g = gen(name)
    a, b = g.build(0, "K"), g.build(1, "K")
    assert a.fact != b.fact
    assert set(a.oracle_files) != set(b.oracle_files)


@pytest.mark.parametrize("name", FAMILIES)
def test_default_size_is_large_and_the_rule_hides_among_filler(name):
    spec = gen(name).build(0, "none")
    head = validate.head_tree(spec)
    code = [p for p in head if p.endswith(".py") and not p.startswith("tests/")]
    assert len(code) >= 25
    assert len(spec.commits) >= 150
    (rule,) = spec.oracle_files
    assert rule.count("/") >= 2, "the rule module sits in a subpackage next to filler modules"
    assert rule.rsplit("/", 1)[-1].removesuffix(".py") not in spec.statement


@pytest.mark.parametrize("name", FAMILIES)
def test_size_knob_scales_the_repo(name):
    sized = build_sized(name)
    small = sized(0, "H", "small")
    large = sized(0, "H", (50, 500))
    assert len(large.commits) >= 500 > len(small.commits)
    head = validate.head_tree(large)
    assert len([p for p in head if p.endswith(".py") and not p.startswith("tests/")]) >= 50
    assert validate.check_placement(large) == []
    assert small.fact == large.fact


@pytest.mark.parametrize("name", FAMILIES)
def test_memory_has_distractors_and_a_superseded_near_miss(name):
    spec = gen(name).build(0, "none")
    memory = {p: c for p, c in validate.head_tree(spec).items() if artifact_kind(p) is not None}
    entries = [e for text in memory.values() for e in text.split("\n\n") if e.strip()]
    assert len(entries) >= 5 + 15  # the kit's generic entries plus at least five of the family's
    superseded = [p for p, text in memory.items() if "Superseded" in text]
    assert superseded
    guess = spec.conventional_guess
    # The near-miss names the conventional value: its first number, or the whole order for orderings.
    value = guess.split(": ", 1)[1] if ": " in guess else next(w for w in guess.split() if w[0].isdigit())
    assert any(value in memory[p] for p in superseded), (value, superseded)


@pytest.mark.parametrize("name", FAMILIES)
def test_the_regressing_commit_is_buried_under_later_filler(name):
    spec = gen(name).build(0, "K")
    (rule,) = spec.oracle_files
    touching = [i for i, c in enumerate(spec.commits) if rule in c.files]
    assert len(touching) == 2  # introduced once, regressed once
    assert len(spec.commits) - touching[-1] > 20
