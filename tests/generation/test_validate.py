import dataclasses

import pytest

from sdebench.generation import generate, validate
from sdebench.generation.fresh import FreshFamily, derive
from sdebench.generation.scale import LEVELS, enlarge
from sdebench.tasks.artifacts import SOURCES
from sdebench.tasks.commits import Commit
from sdebench.tasks.tokens import find_tokens
from tests.generation import shape_fixture
from tests.helpers import ROOT, billing_spec


@pytest.mark.parametrize(
    "text,tokens,found",
    [
        ("TTL is 417s here", ["417"], ["417"]),
        ("ttl 4170 ms", ["417"], []),
        ("id a417", ["417"], []),
        ("Rounds HALF-DOWN\nalways", ["half-down"], ["half-down"]),
        ("uses ROUND_HALF_DOWN", ["half_down"], []),
        ("uses ROUND_HALF_DOWN", ["round_half_down"], ["round_half_down"]),
        ("ties   go\n down", ["ties go down"], ["ties go down"]),
    ],
)
def test_find_tokens_boundaries(text, tokens, found):
    assert find_tokens(text, tokens) == found


def test_clean_spec_passes_static_checks():
    for source in ("H", "K", "F", "X", "none"):
        spec = billing_spec(source)
        assert validate.check_placement(spec) == []
        assert validate.check_no_future_leak(spec) == []


def test_history_outside_h_is_a_leak():
    spec = billing_spec("K")
    commits = list(spec.commits)
    commits[1] = Commit("money: round toward zero now", commits[1].files)
    bad = validate.check_placement(dataclasses.replace(spec, commits=tuple(commits)))
    assert [v.rule for v in bad] == [1]
    assert "found in H" in str(bad[0])


def test_statement_must_not_state_the_fact():
    spec = billing_spec("none")
    bad = validate.check_placement(dataclasses.replace(spec, statement=spec.statement + " Round toward zero."))
    assert any("statement" in str(v) for v in bad)


def test_missing_fact_in_designated_source():
    spec = billing_spec("F")
    bad = validate.check_placement(dataclasses.replace(spec, source="X"))
    assert any("no fact token found in the designated source X" in str(v) for v in bad)


# --- the same shape in every placement ------------------------------------------------------------


def placements(gen, variant=0, build=None):
    """source -> spec of every placement of one variant."""
    return {s: (build or gen.build)(variant, s) for s in SOURCES}


def test_a_family_of_one_shape_passes():
    assert validate.check_shape(placements(shape_fixture.family())) == []


@pytest.mark.parametrize("flaw,message", [
    ("own_file", "shape-fixture v0: the tree after commit 0 differs: docs/adr/0009-gateway.md only in K"),
    ("extra_commit", "shape-fixture v0: the number of commits differs: H 6, K 5, F 5, X 5, none 5"),
    ("touched", "shape-fixture v0: commit 2 touches other paths: README.md only in H"),
    ("dangling_adr", "shape-fixture v0: ADR-0009 in docs/adr/0003-retries.md names no file (in H/K/F/X/none)"),
    ("dangling_path", "shape-fixture v0: docs/runbooks/retries.md in docs/adr/0003-retries.md names no file "
                      "(in H/K/F/X/none)"),
])
def test_each_break_of_the_shape_is_one_line_naming_the_variant_and_the_difference(flaw, message):
    got = validate.check_shape(placements(shape_fixture.family(flaw)))
    assert [str(v) for v in got] == [f"rule shape (same shape in every placement): {message}"]


def test_references_resolve_by_adr_number_path_or_file_name():
    spec = placements(shape_fixture.family())["K"]
    head = validate.head_tree(spec)
    notes = ("See ADR-3, ADR-0003, docs/adr/0003-retries.md, CONVENTIONS.md and .agent/preferences.md; "
             "refunds.py is a sibling's code. ADR-0042 and docs/missing.md are not here.")
    commits = (*spec.commits[:-1], Commit(spec.commits[-1].message, {**spec.commits[-1].files, "docs/notes.md": notes}))
    got = validate.dangling_references(dataclasses.replace(spec, commits=commits))
    assert got == [("docs/notes.md", "ADR-0042"), ("docs/notes.md", "docs/missing.md")]
    assert "docs/CONVENTIONS.md" in head


def test_generate_writes_no_placement_of_a_variant_of_two_shapes(tmp_path, capsys):
    gens = tmp_path / "gens"
    gens.mkdir()
    (gens / "fixture.py").write_text("from tests.generation.shape_fixture import family\n\n"
                                     "GENERATOR = family('own_file')\n")
    out = tmp_path / "tasks"
    code = generate.main(["--generators", str(gens), "--out", str(out), "--no-progress", "--sources", "K,none"])
    err = capsys.readouterr().err
    assert code == 1 and "0/2 tasks valid" in err
    line = "rule shape (same shape in every placement): shape-fixture v0: the tree after commit 0 differs: "
    assert err.count(line + "docs/adr/0009-gateway.md only in K") == 2  # both selected placements
    assert not [d for d in out.iterdir() if d.is_dir()]


@pytest.mark.slow
def test_the_memory_at_large_scale_keeps_one_shape():
    gen = generate.load_generator(ROOT / "generators" / "role_precedence.py")
    large = placements(gen, build=lambda v, s: enlarge(gen.build(v, s), LEVELS["large"], gen))
    assert validate.check_shape(large) == []


@pytest.mark.slow
def test_a_fresh_set_keeps_one_shape():
    gen = FreshFamily(generate.load_generator(ROOT / "generators" / "title_boost.py"),
                      derive("Gq7v2Lr9XkTz0bWm4NsY8cHd1pJf6uEa3RiKoVx5"))
    assert validate.check_shape(placements(gen)) == []
