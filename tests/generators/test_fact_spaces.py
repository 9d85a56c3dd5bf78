"""Declared fact spaces (rule 7): the draw stays inside the space, every candidate renders, and what
the prober sees does not change with the candidate (no sandbox runs: `sdebench.generation.probe` runs them)."""

from __future__ import annotations

import random

import pytest

from sdebench.generation.facts import CONVENTIONAL_WEIGHT
from sdebench.generation.generate import load_generator
from sdebench.generation.probe import _independent, declares_space, render

from ..helpers import ROOT

FAMILIES = ("inventory_reorder", "backoff_policy", "keepalive_limit", "log_sampling", "retry_backoff",
            "title_boost", "ledger")


def gen(name):
    """The GENERATOR of a family module."""
    return load_generator(ROOT / "generators" / f"{name}.py")


@pytest.mark.parametrize("name", FAMILIES)
def test_the_space_holds_the_draw_and_every_variant_fact(name):
    g = gen(name)
    assert declares_space(g)
    assert g.space.outside_draw() == []
    values = set(g.space.values())
    assert all(g.fact(v) in values for v in g.variants)
    # Conventional candidates come first, at the top weight; no candidate outweighs them.
    weights = [w for _, w in g.space.candidates]
    assert weights[0] == CONVENTIONAL_WEIGHT == max(weights)
    assert abs(sum(p for _, p in g.space.draw) - 1) < 1e-9


@pytest.mark.parametrize("name", FAMILIES)
def test_every_candidate_renders_and_the_fact_renders_the_oracle(name):
    g = gen(name)
    v = g.variants[0]
    assert render(g, v, g.fact(v)) == dict(g.build(v, "none").oracle_files)
    rng = random.Random(name)
    for value in rng.sample(g.space.values(), 12):
        files = render(g, v, value)
        assert set(files) == set(g.build(v, "none").oracle_files)
        compile(next(iter(files.values())), "rule", "exec")


@pytest.mark.parametrize("name", FAMILIES)
def test_the_prober_view_does_not_depend_on_the_candidate(name):
    g = gen(name)
    v = g.variants[-1]
    spec = g.build(v, "none")
    for value in (g.space.values()[0], g.space.values()[-1]):
        assert _independent(spec, g.build(v, "none", fact=value)) == []
