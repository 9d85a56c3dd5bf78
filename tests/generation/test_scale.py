"""The memory scale knob: parsing, the default leaves tasks alone, and a scaled task keeps every
generation rule (fact tokens only in the designated source, deterministic, the engine's validation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdebench.generation import validate
from sdebench.generation.generate import build_task, load_generator, main
from sdebench.generation.scale import (
    LEVELS,
    Scale,
    domain_words,
    enlarge,
    in_domain_words,
    near_miss_candidates,
    parse_scale,
    scale_key,
    scale_tag,
)
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES, SOURCES, artifact_kind
from sdebench.tasks.record import load
from sdebench.tasks.tokens import find_tokens

TTL = Path("generators/ttlcache.py")
SMALL = Scale(commits=240, docs=24, notes=40, near_miss=4)


@pytest.fixture(scope="module")
def gen():
    return load_generator(TTL)


@pytest.fixture(scope="module")
def scaled(gen):
    return {s: enlarge(gen.build(0, s), SMALL, gen) for s in SOURCES}


def test_parse_scale_levels_counts_and_errors():
    assert parse_scale("default") == Scale() and parse_scale("default").is_default
    assert parse_scale("large") == LEVELS["large"] and LEVELS["large"].commits == 2000
    assert parse_scale("large,notes=500") == Scale(2000, 120, 500, 4)
    assert parse_scale("commits=300, docs=10") == Scale(commits=300, docs=10)
    assert parse_scale("large").label == "large"
    assert parse_scale("commits=300").label == "commits=300,docs=0,notes=0,near_miss=0"
    for bad, why in [("huge", "unknown scale level"), ("commits=x", "whole number"), ("pages=3", "unknown scale key"),
                     ("docs=-1", "must not be negative"), ("", "empty")]:
        with pytest.raises(ValueError, match=why):
            parse_scale(bad)


def test_default_scale_returns_the_spec_itself(gen):
    spec = gen.build(0, "K")
    assert enlarge(spec, LEVELS["default"], gen) is spec


def test_cli_rejects_a_bad_scale_in_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--scale", "enormous", "--families", "ttlcache"])
    assert e.value.code == 2
    assert "unknown scale level 'enormous'" in capsys.readouterr().err


def test_scaled_history_docs_and_notes_have_the_asked_size(scaled, gen):
    small = gen.build(0, "K")
    spec = scaled["K"]
    assert len(spec.commits) == SMALL.commits
    # the family's own commits keep their order; the repro commit stays at HEAD
    own = [c.message for c in small.commits]
    assert [c.message for c in spec.commits if c.message in own] == own
    assert spec.commits[-1] == small.commits[-1]
    head, before = validate.head_tree(spec), validate.head_tree(small)
    docs = [p for p in head if artifact_kind(p) == "K" and p not in before]
    assert len(docs) >= SMALL.docs
    assert head[PREFERENCES].count("\n- ") >= before[PREFERENCES].count("\n- ") + SMALL.notes
    assert head[PAST_FIXES].count("\n## ") >= before[PAST_FIXES].count("\n## ") + SMALL.notes
    assert scale_tag(SMALL) in spec.tags
    # the code the tests exercise is untouched: same fixes, same tests, same test ids
    assert (spec.oracle_files, spec.hidden_tests, spec.fail_to_pass, spec.pass_to_pass) == (
        small.oracle_files, small.hidden_tests, small.fail_to_pass, small.pass_to_pass)
    assert all(head[p] == c for p, c in before.items() if artifact_kind(p) is None)


def test_scaled_tasks_keep_rules_1_5_6_in_every_placement(scaled, gen):
    for source, spec in scaled.items():
        assert validate.check_structure(spec, "ttlcache", 0, source) == []
        assert validate.check_placement(spec) == [], source
        assert validate.check_no_future_leak(spec) == [], source
        assert validate.check_determinism(spec, enlarge(gen.build(0, source), SMALL, gen)) == []


def test_distractors_are_the_same_in_every_placement(scaled):
    """Only the family's fact entry differs between placements: the scale's distractors do not
    depend on the source, so a file's content reveals nothing but the fact."""
    none = validate.head_tree(scaled["none"])
    for source in ("K", "F", "X"):
        head = validate.head_tree(scaled[source])
        differ = sorted(p for p in head if head[p] != none.get(p))
        assert len(differ) == 1, (source, differ)
        extra = {b.strip() for b in head[differ[0]].split("\n\n")} - {b.strip() for b in none[differ[0]].split("\n\n")}
        assert len(extra) == 1 and find_tokens(extra.pop(), scaled[source].fact_tokens)

def test_distractor_history_is_the_same_in_every_placement(scaled, gen):
    """H differs from none in the family's own commits only, as it does unscaled."""
    def differing(h, n):
        return [a.message for a, b in zip(h, n, strict=True) if a != b]
    own = differing(in_domain_words(gen.build(0, "H")).commits, gen.build(0, "none").commits)
    assert own and differing(scaled["H"].commits, scaled["none"].commits) == own
    # K, F and X differ from none in the initial import only (the file holding the fact entry)
    assert all(s.commits[1:] == scaled["none"].commits[1:] for k, s in scaled.items() if k not in ("H", "none"))


def test_near_miss_facts_come_from_outside_the_draw_and_are_framed(gen, scaled):
    cands = near_miss_candidates(gen, 0, 4, scale_key("ttlcache", 0, SMALL))
    drawable = {v for v, _ in gen.space.draw}
    assert len(cands) == 4 and not drawable & set(cands) and gen.fact(0) not in cands
    head = validate.head_tree(scaled["none"])
    text = "\n".join(head.values()) + "\n".join(c.message for c in scaled["none"].commits)
    told = [c for c in cands if find_tokens(text, gen.tell(0, c).fact_tokens)]
    assert told, "no near-miss candidate appears in the scaled memory"
    assert "Superseded (no longer in force" in text and "neighbouring service" in text


def test_domain_words_replace_code_identifiers():
    assert domain_words("set MAX_REQUESTS_PER_CONNECTION = 226, the platform value") == \
        "set max requests per connection: 226, the platform value"
    assert domain_words("Fix: refunds.py rounds with `ROUND_DOWN`; fy_start_month = 3") == \
        "Fix: the refunds module rounds with round down; fy start month: 3"
    # words that are no identifiers stay as they are
    assert domain_words("ConnectionResetError after 14 min 36 s (HTTP 429)") == "ConnectionResetError after 14 min 36 s (HTTP 429)"


KEEPALIVE = Path("generators/keepalive_limit.py")


@pytest.mark.parametrize("source", ["K", "X", "F"])
def test_the_scaled_fact_item_names_no_code_identifier(source):
    """At scale the fact-bearing item is in the domain's words; the published (default) tasks keep
    theirs, and every rule still holds."""
    fam = load_generator(Path("generators/password_policy.py" if source == "F" else KEEPALIVE))
    small, spec = fam.build(0, source), enlarge(fam.build(0, source), SMALL, fam)
    ident = {"K": "MAX_REQUESTS_PER_CONNECTION", "X": "MAX_REQUESTS_PER_CONNECTION", "F": "MAX_RUN"}[source]
    path = [p for p, t in validate.head_tree(small).items()
            if artifact_kind(p) == source and find_tokens(t, small.fact_tokens)]
    assert path, "the family's fact item moved"
    before, after = validate.head_tree(small)[path[0]], validate.head_tree(spec)[path[0]]
    fact_line = [line for line in before.splitlines() if ident in line]
    assert fact_line, "the unscaled item no longer names the identifier"
    told = [line for line in after.splitlines() if find_tokens(line, spec.fact_tokens)]
    assert told and not any(ident in line for line in told), told
    assert any(ident.lower().replace("_", " ") in line for line in told)
    assert validate.check_placement(spec) == [] and validate.check_no_future_leak(spec) == []


@pytest.mark.slow
def test_rule_7_is_proved_on_the_scaled_repo():
    """The probe runs over the scaled HEAD (its filler included) and gives the default figures."""
    from sdebench.generation.probe import probe_family

    fam = load_generator(KEEPALIVE)
    plain, big = probe_family(fam, 0, {"backend": "unsafe_local"}), probe_family(fam, 0, {"backend": "unsafe_local"}, scale=SMALL)
    assert not big.violations(), big.violations()
    assert (big.classes, big.resolve, big.fact_submit) == (plain.classes, plain.resolve, plain.fact_submit)


@pytest.mark.slow
def test_engine_validates_a_large_task_with_real_runs(tmp_path):
    """The whole engine at 2,000 commits: rules 1-6 with the real validation runs; the task is written."""
    out = build_task(TTL, 0, "H", tmp_path, {"backend": "unsafe_local"}, None, scale=LEVELS["large"])
    assert out.written, out.violations
    task = load(tmp_path / "ttlcache-v0-H")
    assert task.commits == 2000 and "memory-scale=large" in task.tags and task.memory_scale == "large"


@pytest.mark.parametrize("mutation", [
    # a message of the family's own history that differs between builds (it sinks among the filler)
    "commits[0] = Commit(commits[0].message + ' ' + str(random.random()), commits[0].files)\n"
    "spec = dataclasses.replace(spec, commits=tuple(commits))",
    # a statement that differs between builds
    "spec = dataclasses.replace(spec, statement=spec.statement + str(random.random()))",
])
def test_rule_6_catches_a_nondeterministic_generator_at_scale(tmp_path, mutation):
    """Rule 6 compares two real builds of the scaled task (the filler, a pure function of the
    variant, is shared between them; its own determinism is tested in test_kit)."""
    from tests.helpers import write_broken

    path = write_broken(tmp_path / "gens", "broken-random", mutation)
    out = build_task(path, 0, "K", tmp_path / "out", {"backend": "unsafe_local"}, None, scale=SMALL)
    assert not out.written and any(v.startswith("rule 6 ") for v in out.violations), out.violations


def test_the_same_generator_without_randomness_is_accepted_at_scale(tmp_path):
    from tests.helpers import write_broken

    path = write_broken(tmp_path / "gens", "steady", "pass")
    out = build_task(path, 0, "K", tmp_path / "out", {"backend": "unsafe_local"}, None, scale=SMALL)
    assert out.written, out.violations
