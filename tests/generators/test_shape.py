"""Every family's placements share one shape (validate.check_shape): the same paths in every commit,
the same history, references between artifacts that resolve (generate checks it on every build)."""

from __future__ import annotations

import pytest

from sdebench.generation import validate
from sdebench.generation.generate import load_generator
from sdebench.tasks.artifacts import SOURCES
from sdebench.tasks.tokens import find_tokens

from ..helpers import ROOT

FAMILIES = sorted(p.stem for p in (ROOT / "generators").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("name", FAMILIES)
def test_every_variant_has_one_shape_in_every_placement(name):
    gen = load_generator(ROOT / "generators" / f"{name}.py")
    for v in gen.variants:
        assert validate.check_shape({s: gen.build(v, s) for s in SOURCES}) == []


def test_the_k_fact_file_is_a_distractor_of_its_kind_elsewhere():
    gen = load_generator(ROOT / "generators" / "role_precedence.py")
    k, none = (validate.head_tree(gen.build(0, s)) for s in ("K", "none"))
    path = "docs/adr/0006-multi-role-users.md"
    assert k[path].startswith(none[path]) and none[path].startswith("# ADR-0006:")
    assert find_tokens(k[path], gen.build(0, "K").fact_tokens)
    assert not find_tokens(none[path], gen.build(0, "K").fact_tokens)
    assert "Superseded by" not in none["docs/adr/0004-role-precedence.md"]
