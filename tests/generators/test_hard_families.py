"""The hard-tier families: every competency in at least three families, the same shape in every
placement, decoys that are candidates but never fact tokens, a fact sentence that spells the fact
alone, and naive readers that miss the fact on every published placement.

Rules 1-8 themselves are proved by `python -m sdebench.generate` (real runs); these tests check what
the engine does not compare: placements against each other, and the family's declarations.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from sdebench.delivery.memory import MemoryItem, corpus_of, dated_corpus
from sdebench.generation.facts import CONVENTIONAL_WEIGHT
from sdebench.generation.fresh import FreshFamily, derive
from sdebench.generation.generate import discover, load_generator
from sdebench.generation.readers import READERS, Readers, candidates
from sdebench.generation.validate import check_placement, head_tree
from sdebench.tasks import repo
from sdebench.tasks.artifacts import RECALL, SOURCES, artifact_kind, competencies_of
from sdebench.tasks.record import discover as discover_tasks
from sdebench.tasks.record import load
from sdebench.tasks.repo import HistoryCommit
from sdebench.tasks.tokens import find_tokens
from tests.helpers import ROOT


def _hard_generators() -> list:
    found, errors = discover(ROOT / "generators")
    assert not errors, errors
    gens = [load_generator(p) for _, p in sorted(found.items())]
    return [g for g in gens if any(g.build(v, "none").competency != RECALL for v in g.variants)]


HARD = _hard_generators()
HARD_TIER = competencies_of("hard")


@pytest.fixture(scope="module", params=HARD, ids=lambda g: g.family)
def family(request):
    """(generator, {(variant, source): spec}) of one hard family."""
    gen = request.param
    return gen, {(v, s): gen.build(v, s) for v in gen.variants for s in SOURCES}


def test_every_hard_competency_in_three_families():
    by_competency = defaultdict(set)
    for gen in HARD:
        assert len(gen.variants) >= 2, gen.family
        for v in gen.variants:
            by_competency[gen.build(v, "none").competency].add(gen.family)
    assert len(HARD) >= 8
    for competency in HARD_TIER:
        assert len(by_competency[competency]) >= 3, (competency, sorted(by_competency[competency]))


def test_same_shape_in_every_placement(family):
    gen, specs = family
    for v in gen.variants:
        none = specs[(v, "none")]
        shape = [sorted(c.files) for c in none.commits]
        arts = sorted(p for p in head_tree(none) if artifact_kind(p))
        for s in SOURCES:
            spec = specs[(v, s)]
            assert spec.competency == none.competency != RECALL
            assert [sorted(c.files) for c in spec.commits] == shape, (v, s)
            assert sorted(p for p in head_tree(spec) if artifact_kind(p)) == arts, (v, s)
            assert check_placement(spec) == [], (v, s)


def test_decoys_are_candidates_and_never_fact_tokens(family):
    """Every value memory repeats (old, headline, announced, usual) is a candidate of the space at the
    conventional weight; none shares a spelling with the fact, and each is mentioned in every placement."""
    gen, specs = family
    heavy = [c for c, w in gen.space.candidates if w == CONVENTIONAL_WEIGHT]
    for v in gen.variants:
        fact = gen.fact(v)
        assert fact not in heavy and fact in {c for c, _ in gen.space.draw}
        tokens = specs[(v, "K")].fact_tokens
        for c in heavy:
            assert not find_tokens(" ".join(gen.spellings(v, c)), tokens), (v, c)
        none = specs[(v, "none")]
        memory = "\n".join(t for p, t in head_tree(none).items() if artifact_kind(p)) + "\n".join(
            c.message for c in none.commits)
        repeated = [c for c in heavy if find_tokens(memory, gen.spellings(v, c))]
        assert repeated, f"v{v}: no decoy value in the memory every placement shares"


def test_the_fact_sentence_spells_the_fact_alone(family):
    """Under oracle delivery the readers read the fact sentence: it must name the fact and no other candidate."""
    gen, specs = family
    values = gen.space.values()
    for v in gen.variants:
        readers = Readers(candidates(values, [gen.spellings(v, c) for c in values]))
        scan = readers.scan(MemoryItem("oracle", "K", "fact", specs[(v, "K")].fact))
        assert [values[i] for i in scan.counts] == [gen.fact(v)], (v, specs[(v, "K")].fact)


def _fact_items_defeat_readers(gen, variant: int, spec, fact) -> None:
    """Every item of `spec`'s memory that mentions `fact` leaves each naive reader on another value
    (a composed fact: no item mentions it)."""
    readers = _readers(gen, variant)
    at = gen.space.values().index(fact)
    commits = [HistoryCommit(f"{i:040x}", c.message, {}, "2023-11-14T00:00:00+00:00") for i, c in enumerate(spec.commits)]
    stating = [i for i in corpus_of(commits, head_tree(spec)) if at in readers.scan(i).counts]
    if spec.competency == "synthesis":
        assert not stating, (spec.task_id, [i.id for i in stating])  # the parts are other values
        return
    assert stating or spec.source == "none", spec.task_id
    for item in stating:
        for dates in ([None], ["2023-11-14"]):
            for reader in READERS:
                pick = readers.pick(reader, [item], dates, spec.statement)
                assert pick is not None and pick.value != fact, (spec.task_id, reader, item.id)


def _readers(gen, variant: int) -> Readers:
    values = gen.space.values()
    return Readers(candidates(values, [gen.spellings(variant, c) for c in values]))


def test_every_item_stating_the_fact_defeats_the_readers_alone(family):
    """Each memory item that mentions the fact mentions a decoy first, more often, and last (any dates
    written before the values), so no delivery's view, however it ranks or cuts the corpus, lets a
    naive reader pick the fact from it: the hard structure holds at every scale and in fresh sets.
    A composed fact (synthesis) is mentioned by no item at all."""
    gen, specs = family
    for v in gen.variants:
        for source in ("H", "K", "F", "X"):
            _fact_items_defeat_readers(gen, v, specs[(v, source)], gen.fact(v))


def test_a_fresh_set_keeps_the_rules_and_the_structure(family):
    """A fresh set (new facts, names and entry order from a seed) keeps rule 1 and the readers'
    defeat item by item: the structure does not depend on the published draw."""
    gen, _ = family
    fresh = FreshFamily(gen, derive("hard-tier test seed: " + "k9Qz" * 12))
    for v in gen.variants:
        assert fresh.fact(v) != gen.fact(v)
        for source in SOURCES:
            spec = fresh.build(v, source)
            assert check_placement(spec) == [], (v, source)
            _fact_items_defeat_readers(fresh, v, spec, fresh.fact(v))


TASKS = [t for t in (load(d) for d in discover_tasks(ROOT / "tasks")) if t.competency in HARD_TIER]


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_naive_readers_miss_the_fact_in_the_published_task(task, tmp_path):
    """Over the full repo's memory every naive reader picks a value other than the fact (rule 8 judges
    the same picks by test runs, over every delivery's view)."""
    gen = next(g for g in HARD if g.family == task.family)
    values = gen.space.values()
    readers = Readers(candidates(values, [gen.spellings(task.variant, c) for c in values]))
    items, dates = dated_corpus(repo.unbundle(task.bundle, tmp_path / "r"))
    fact = gen.fact(task.variant)
    for reader in READERS:
        pick = readers.pick(reader, items, dates, task.statement)
        assert pick is None or pick.value != fact, (reader, pick.value)
