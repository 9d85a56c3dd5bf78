"""The realistic filler of familykit: deterministic, valid Python, sized, and free of avoided tokens."""

from __future__ import annotations

import ast
import re

import pytest

from sdebench.generation.kit import FILLER_SIZES, FILLER_TEST, FillerVocab, filler_size, make_filler
from sdebench.tasks.tokens import find_tokens

VOCAB = FillerVocab(
    "depot", ("crate", "bin", "route", "supplier", "pallet"), ("quantity", "weight_kg", "unit_cost"),
    ("region", "carrier", "category"), ("receiving", "audit", "reports", "picking", "returns", "transfers",
                                        "labels", "pricing", "forecast"))


def versions(filler):
    """Every (path, content) the filler ever writes, initial files included."""
    out = list(filler.files.items())
    for commit in filler.commits:
        out += [(p, c) for p, c in commit.files.items() if c is not None]
    return out


def test_same_key_same_bytes_other_key_other_bytes():
    a = make_filler(VOCAB, "fam-0", 12, 60)
    assert a == make_filler(VOCAB, "fam-0", 12, 60)
    assert a.files != make_filler(VOCAB, "fam-1", 12, 60).files


@pytest.mark.parametrize("size", ["default", "large"])
def test_sizes_reach_their_module_and_commit_counts(size):
    modules, commits = FILLER_SIZES[size]
    filler = make_filler(VOCAB, "fam-0", modules, commits)
    assert len(filler.modules) == modules
    assert len(filler.commits) == commits
    assert len({m.rsplit("/", 1)[-1] for m in filler.modules}) == modules
    assert FILLER_SIZES["large"][0] >= 50 and FILLER_SIZES["large"][1] >= 500


def test_every_version_parses_and_every_commit_changes_something():
    filler = make_filler(VOCAB, "fam-0", 24, 150)
    for path, content in versions(filler):
        ast.parse(content, filename=path)
    state = dict(filler.files)
    for commit in filler.commits:
        assert commit.message.strip()
        for path, content in commit.files.items():
            assert state.get(path) != content, commit.message
            state[path] = content


def test_head_modules_import_and_smoke_test_passes(tmp_path, monkeypatch):
    filler = make_filler(VOCAB, "fam-0", 20, 120)
    state = {**filler.files, "depot/__init__.py": '"""depot."""\n'}
    for commit in filler.commits:
        state.update(commit.files)
    for path, content in state.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {}
    exec(compile(state[FILLER_TEST], FILLER_TEST, "exec"), namespace)
    namespace["test_every_module_imports"]()


def test_code_is_varied_not_one_template():
    filler = make_filler(VOCAB, "fam-0", 24, 150)
    defs = set()
    for path in filler.modules:
        defs |= set(re.findall(r"^(?:def|class) (\w+)", filler.files.get(path, ""), flags=re.M))
    shapes = {re.sub(r"_(?:by|of|per|over)_.*|^(?:total|batch|index|unique|latest)_", "", d) for d in defs}
    assert len(defs) >= 40
    assert len(shapes) >= 15
    messages = [c.message for c in filler.commits]
    assert len(set(messages)) >= 0.9 * len(messages)


def test_avoided_tokens_never_appear():
    # Tokens a careless filler would hit: small numbers and words of the vocabulary.
    avoid = ("5", "10", "0.5", "quantity", "1 in 100")
    filler = make_filler(VOCAB, "fam-0", 24, 150, avoid=avoid)
    for path, content in versions(filler):
        assert find_tokens(content, avoid) == [], path
    for commit in filler.commits:
        assert find_tokens(commit.message, avoid) == []


def test_bad_sizes_are_clear_errors():
    with pytest.raises(ValueError, match="unknown filler size"):
        filler_size("huge")
    with pytest.raises(ValueError, match="modules >= 1"):
        filler_size((0, 10))
    assert filler_size((7, 9)) == (7, 9)
    assert filler_size("large") == FILLER_SIZES["large"]
