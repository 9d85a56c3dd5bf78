"""The hard tier at `--scale large`: each competency keeps its structure among 2,000 commits, 120 docs
and 300 notes per .agent file (the family's own statements spread over the history, the decoys in
every placement), no naive reader picks the fact from any delivery's view, and the engine proves
rules 1-8 on a large hard task with real runs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from sdebench.delivery.memory import dated_corpus
from sdebench.generation import validate
from sdebench.generation.generate import build_task, load_generator, probe_variant
from sdebench.generation.readers import Readers, candidates, delivery_views, picks
from sdebench.generation.scale import LEVELS, enlarge, in_domain_words
from sdebench.tasks import repo
from sdebench.tasks.artifacts import artifact_kind
from sdebench.tasks.record import load
from sdebench.tasks.tokens import find_tokens
from tests.helpers import ROOT

LARGE = LEVELS["large"]
# One family variant per competency, each in a placement of its own.
CASES = [("card_fees", 0, "H", "conflict"), ("card_fees", 1, "K", "validity"), ("parking_tariff", 0, "F", "scope"),
         ("parking_tariff", 1, "X", "synthesis"), ("sensor_calibration", 0, "K", "implicit")]


@pytest.mark.slow
@pytest.mark.parametrize("name,variant,source,competency", CASES, ids=[c[3] for c in CASES])
def test_a_large_hard_task_keeps_its_structure_and_defeats_the_readers(name, variant, source, competency):
    gen = load_generator(ROOT / "generators" / f"{name}.py")
    small = gen.build(variant, source)
    spec = enlarge(small, LARGE, gen)
    assert spec.competency == competency and len(spec.commits) == LARGE.commits
    assert validate.check_placement(spec) == [] and validate.check_no_future_leak(spec) == []
    assert validate.check_determinism(spec, enlarge(gen.build(variant, source), LARGE, gen)) == []
    # The family's own commits (its dated statements in history) keep their order and are spread:
    # filler lies between every two of them.
    own = [c.message for c in in_domain_words(small).commits]
    at = [i for i, c in enumerate(spec.commits) if c.message in own]
    assert [spec.commits[i].message for i in at] == own
    assert all(b - a > 1 for a, b in zip(at, at[1:], strict=False)), at
    # The decoys every placement shares are still there, among the scale's docs and notes.
    head = validate.head_tree(spec)
    docs = [p for p in head if artifact_kind(p) == "K"]
    assert len(docs) >= LARGE.docs
    memory = "\n".join(t for p, t in head.items() if artifact_kind(p)) + "\n".join(c.message for c in spec.commits)
    decoys = [c for c, w in gen.space.candidates if w == max(w for _, w in gen.space.candidates)]
    assert any(find_tokens(memory, gen.spellings(variant, c)) for c in decoys)
    # No reader picks the fact from what full, memtool or inject show.
    values = gen.space.values()
    readers = Readers(candidates(values, [gen.spellings(variant, c) for c in values]))
    with tempfile.TemporaryDirectory() as tmp:
        repo.build(Path(tmp) / "r", spec.commits)
        items, dates = dated_corpus(Path(tmp) / "r")
    views = {k: v for k, v in delivery_views(items, dates, spec.statement, spec.fact).items() if k != "oracle"}
    got = picks(readers, views, spec.statement)
    assert all(c is None or c.value != gen.fact(variant) for c in got.values()), got


@pytest.mark.slow
def test_the_engine_proves_rules_1_to_8_on_a_large_hard_task(tmp_path):
    path = ROOT / "generators" / "card_fees.py"
    sandbox = {"backend": "unsafe_local"}
    probed = probe_variant(path, 0, sandbox, scale=LARGE)
    assert probed is not None and probed.readers is not None and not probed.violations()
    out = build_task(path, 0, "X", tmp_path, sandbox, probed, scale=LARGE)
    assert out.written, out.violations
    assert out.readers and not any(j.resolves for j in out.readers if j.view != "oracle")
    task = load(tmp_path / "card-fees-v0-X")
    assert task.competency == "conflict" and task.commits == LARGE.commits and task.memory_scale == "large"
