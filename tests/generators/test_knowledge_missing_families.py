"""Structural checks on the knowledge-missing families that the rule checks do not cover.

The engine validates each placement alone; these tests compare placements and variants: the
same artifact paths everywhere, the fact entry only in the designated source's file, a
superseded near-miss and enough family distractors in every corpus, variants that really differ.
"""

from __future__ import annotations

import pytest

from sdebench.generation.generate import load_generator
from sdebench.generation.kit import standard_memory
from sdebench.generation.validate import head_tree
from sdebench.tasks.artifacts import SOURCES, artifact_kind
from sdebench.tasks.tokens import find_tokens
from tests.helpers import ROOT

FAMILIES = ("ledger", "taxbase", "backoff_policy", "fiscal_calendar", "password_policy", "dim_weight")
FACT_FILE = {"K": "docs/CONVENTIONS.md", "F": ".agent/preferences.md", "X": ".agent/past_fixes.md"}


def _artifacts(spec) -> dict[str, str]:
    return {p: c for p, c in head_tree(spec).items() if artifact_kind(p) is not None}


def _entries(text: str) -> list[str]:
    return [e for e in text.split("\n\n") if e.strip()]


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    """(generator, {(variant, source): spec}) of one family."""
    gen = load_generator(ROOT / "generators" / f"{request.param}.py")
    return gen, {(v, s): gen.build(v, s) for v in gen.variants for s in SOURCES}


def test_same_artifact_paths_in_every_placement(family):
    gen, specs = family
    for v in gen.variants:
        paths = {s: sorted(_artifacts(specs[(v, s)])) for s in SOURCES}
        assert all(p == paths["none"] for p in paths.values()), paths


def test_fact_entry_only_in_the_designated_file(family):
    gen, specs = family
    for v in gen.variants:
        none = _artifacts(specs[(v, "none")])
        for source, path in FACT_FILE.items():
            arts = _artifacts(specs[(v, source)])
            changed = sorted(p for p in arts if arts[p] != none[p])
            assert changed == [path], (source, changed)
            assert find_tokens(arts[path], specs[(v, source)].fact_tokens)


def test_corpus_has_distractors_and_a_superseded_near_miss(family):
    gen, specs = family
    for v in gen.variants:
        spec = specs[(v, "none")]
        kit = standard_memory("p", "p").render()
        arts = _artifacts(spec)
        # New files (ADRs) are one entry each; in the kit's files, count entries beyond the kit's own.
        new_files = [p for p in arts if p not in kit and p != "README.md"]
        added = sum(len(_entries(arts[p])) - len(_entries(kit[p])) for p in kit)
        assert len(new_files) + added >= 5, (new_files, added)
        near = [t for t in _artifacts(spec).values() if "Superseded" in t]
        assert near, "no superseded near-miss entry"
        assert not find_tokens("\n".join(near), spec.fact_tokens)


def test_variants_differ_in_fact_and_names(family):
    gen, specs = family
    a, b = specs[(0, "K")], specs[(1, "K")]
    assert a.fact != b.fact
    assert sorted(a.oracle_files) != sorted(b.oracle_files)
    assert not find_tokens(a.conventional_guess, a.fact_tokens)
