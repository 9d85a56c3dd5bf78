"""Memory corpus, BM25 search and the inject renderer, on real repos and real bm25s."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdebench.delivery.memory import (
    INJECT_HEADER,
    MemoryIndex,
    corpus_from_repo,
    estimate_tokens,
    format_hits,
    render_inject,
    split_entries,
    tokenize,
)
from sdebench.tasks import repo
from sdebench.tasks.tokens import find_tokens
from tests.minitask import build_all, repo_tasks


def has_fact(text: str, tokens) -> bool:
    return bool(find_tokens(text, tokens))


@pytest.fixture(scope="module")
def mini_tasks(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


@pytest.fixture(scope="module")
def corpora(mini_tasks, tmp_path_factory):
    out = {}
    for source, task in mini_tasks.items():
        clone = repo.unbundle(task.bundle, tmp_path_factory.mktemp("clone") / "r")
        out[source] = corpus_from_repo(clone)
    return out


def test_split_entries_rule():
    text = "# Past fixes\n\nFirst paragraph\nstill first.\n\n- item one\n  continued\n- item two\n\n## Later\n\nLast one."
    assert split_entries(text) == [
        "# Past fixes\nFirst paragraph\nstill first.",
        "- item one\n  continued",
        "- item two",
        "## Later\nLast one.",
    ]
    assert split_entries("") == []
    assert split_entries("# Only a heading\n") == ["# Only a heading"]


def test_tokenize_splits_identifiers_and_drops_stopwords():
    assert tokenize("ROUND_HALF_DOWN is the mode of the Invoice") == ["round", "half", "down", "mode", "invoice"]


def test_corpus_items_have_labels_and_the_fact_sits_in_its_source(mini_tasks, corpora):
    for source, task in mini_tasks.items():
        items = corpora[source]
        assert {i.source for i in items} == {"H", "K", "F", "X"}
        assert len({i.id for i in items}) == len(items)
        assert sum(i.source == "H" for i in items) == task.commits
        carriers = {i.source for i in items if has_fact(i.text, task.fact_tokens)}
        assert carriers == (set() if source == "none" else {source})


def test_history_items_leave_out_artifact_diffs(corpora):
    notes = [i for i in corpora["K"] if i.source == "H" and i.title == "Write down project notes"]
    assert len(notes) == 1
    assert notes[0].text == "Write down project notes"  # the commit only touched artifact files
    code = [i for i in corpora["K"] if i.source == "H" and i.title == "Tidy pricing constants"]
    assert "--- shop/pricing.py" in code[0].text and "+LOYALTY_RATE = 0.10" in code[0].text
    assert "\n@@" in code[0].text and "@@ -" not in code[0].text  # hunk line ranges dropped


def test_notes_files_split_into_entries(corpora):
    f_items = [i for i in corpora["F"] if i.source == "F"]
    # header block "# Preferences" joins the list block; the list splits into its items
    assert [i.text for i in f_items] == [
        "# Preferences\n- Keep functions small and typed.",
        "- Run the tests before submitting.",
        "- The user corrected me: the loyalty discount is 17 percent, not a round number.",
    ]
    assert all(i.id.startswith("F:.agent/preferences.md#") for i in f_items)


def test_bm25_search_ranks_the_fact_first(mini_tasks, corpora):
    for source in ("K", "F", "X"):
        index = MemoryIndex(corpora[source])
        hits = index.search("loyalty discount percent", k=3)
        assert 1 <= len(hits) <= 3
        assert hits[0].item.source == source
        assert has_fact(hits[0].item.text, mini_tasks[source].fact_tokens)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    index = MemoryIndex(corpora["H"])
    top = index.search("loyalty discount finance", k=1)[0]
    assert top.item.source == "H" and "17 percent" in top.item.text


def test_search_edge_cases(corpora):
    index = MemoryIndex(corpora["K"])
    assert index.search("zzzqqq xyzzy", 5) == []
    assert index.search("", 5) == []
    assert index.search("discount", 0) == []
    assert MemoryIndex([]).search("discount", 5) == []
    assert format_hits([]) == "No memory items match the query."
    text = format_hits(index.search("discount", 2))
    assert text.startswith("#1 (score ") and ("[K]" in text or "[H]" in text)


def test_inject_whole_corpus_when_it_fits(mini_tasks, corpora):
    items = corpora["K"]
    inj = render_inject(items, mini_tasks["K"].statement, token_budget=100_000)
    assert inj.mode == "all" and len(inj.items) == len(items)
    assert inj.text.startswith(INJECT_HEADER)
    assert inj.tokens == estimate_tokens(inj.text)
    assert has_fact(inj.text, mini_tasks["K"].fact_tokens)


def test_inject_top_items_under_a_small_budget(mini_tasks, corpora):
    items = corpora["X"]
    whole = render_inject(items, mini_tasks["X"].statement, token_budget=100_000)
    small = render_inject(items, mini_tasks["X"].statement, token_budget=whole.tokens // 2, top_k=10)
    assert small.mode == "top_k"
    assert 0 < small.tokens <= whole.tokens // 2
    assert 0 < len(small.items) < len(items)
    assert has_fact(small.text, mini_tasks["X"].fact_tokens)  # the statement's best match is the fact entry
    none = render_inject(items, mini_tasks["X"].statement, token_budget=5)
    assert none.mode == "empty" and none.text == "" and none.tokens == 0


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_corpus_of_a_repo_without_artifacts(tmp_path: Path):
    from sdebench.tasks.commits import Commit

    repo.build(tmp_path / "r", [Commit("only code", {"a.py": "x = 1\n"})])
    items = corpus_from_repo(tmp_path / "r")
    assert [i.source for i in items] == ["H"]
    assert "+x = 1" in items[0].text


@pytest.mark.parametrize("task_dir", repo_tasks(), ids=lambda p: p.name)
def test_benchmark_fact_is_in_the_items_of_its_source(task_dir: Path, tmp_path: Path):
    from sdebench.tasks.record import load

    task = load(task_dir)
    items = corpus_from_repo(repo.unbundle(task.bundle, tmp_path / "r"))
    carriers = {i.source for i in items if has_fact(i.text, task.fact_tokens)}
    assert carriers == (set() if task.source == "none" else {task.source})
