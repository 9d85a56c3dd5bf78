"""The benchmark's breadth: every source x bottleneck cell, distractors and a near-miss in every corpus."""

from __future__ import annotations

import pytest

from sdebench.delivery.memory import corpus_from_repo
from sdebench.tasks import repo
from sdebench.tasks.artifacts import BOTTLENECKS
from sdebench.tasks.record import discover, load
from sdebench.tasks.tokens import find_tokens
from tests.helpers import ROOT

TASKS = [load(d) for d in discover(ROOT / "tasks")]
GENERATED = [t for t in TASKS if t.grader == "sdebench"]


def test_at_least_twenty_families_and_two_hundred_tasks():
    families = {t.family for t in GENERATED}
    assert len(families) >= 20
    assert len(GENERATED) >= 200


@pytest.mark.parametrize("bottleneck", BOTTLENECKS)
@pytest.mark.parametrize("source", ["H", "K", "F", "X"])
def test_three_families_per_source_and_bottleneck(source, bottleneck):
    families = {t.family for t in GENERATED if t.source == source and t.bottleneck == bottleneck}
    assert len(families) >= 3, f"{source} x {bottleneck}: {sorted(families)}"


@pytest.mark.parametrize("task", GENERATED, ids=lambda t: t.id)
def test_corpus_has_distractors_and_a_near_miss(task, tmp_path):
    items = corpus_from_repo(repo.unbundle(task.bundle, tmp_path / "r"))
    # Commits are history, not planted distractors: count the artifact entries (K, F, X).
    notes = [i for i in items if i.source != "H"]
    distractors = [i for i in notes if not find_tokens(i.text, task.fact_tokens)]
    assert len(distractors) >= 5
    near_misses = [i for i in distractors if "superseded" in i.text.casefold()]
    assert near_misses, f"{task.id}: no superseded near-miss among {len(distractors)} distractors"
