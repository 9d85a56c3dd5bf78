"""The naive memory readers' rules (sdebench.generation.readers) on hand-made memory."""

from __future__ import annotations

import pytest

from sdebench.delivery.memory import MemoryItem, format_hits, parse_rendered, render_inject
from sdebench.generation.readers import READERS, Readers, candidates, delivery_views, prose

TTL = [300, 417, 600, 4170]


def ttl_readers(values=TTL):
    return Readers(candidates(values, [(str(v), f"{v}s", f"{v} seconds") for v in values]))


def item(n: int, text: str, source: str = "K") -> MemoryItem:
    return MemoryItem(f"{source}:{n}", source, f"item {n}", text)


def pick(readers, reader, items, dates=None, statement="cache entries expire too early"):
    got = readers.pick(reader, items, dates or [None] * len(items), statement)
    return None if got is None else got.value


def test_mentions_keep_word_boundaries_the_longest_spelling_and_skip_dates():
    r = ttl_readers()
    scan = r.scan(item(0, "TTL 4170 here, 417s there, a417 and 41700 not; on 2024-03-01 (not 2024) 600 seconds"))
    assert [s for _, _, s in scan.mentions] == ["4170", "417s", "600 seconds"]
    assert scan.counts == {1: 1, 2: 1, 3: 1}
    assert r.scan(item(1, "released 2417-06-00, 0300 a.m.")).counts == {}  # an invalid date's digits stay text


def test_a_multi_part_candidate_needs_every_part_and_the_fuller_one_wins():
    values = [(25, "down"), (25, "up"), (30, "down")]
    spell = {25: ("0.25%", "25 bps"), 30: ("0.30%",), "down": ("rounded down", "floor"), "up": ("rounded up",)}
    r = Readers(candidates(values, [spell[a] + spell[b] for a, b in values]))
    assert r.cands[0].required == frozenset({0, 1}) and r.cands[0].scopes["floor"] == frozenset({1})
    assert r.scan(item(0, "Fees are rounded down.")).counts == {}  # the side alone names no candidate
    assert r.scan(item(1, "A fee of 0.25% is rounded down; 25 bps, floor.")).counts == {0: 2}
    assert set(r.scan(item(2, "0.25% rounded down, 0.30% rounded up")).counts) == {0, 1, 2}
    # A candidate with no side (exact amounts) is a strict subset of (25, down) where both are mentioned.
    values = [(25, None), (25, "down")]
    r = Readers(candidates(values, [("0.25%",), ("0.25%", "rounded down")]))
    assert r.scan(item(3, "0.25%, rounded down")).counts == {1: 1}
    assert r.scan(item(4, "0.25%, exact")).counts == {0: 1}


def test_a_spelling_that_reveals_two_parts_covers_both():
    values = [(3, 10), (3, 1), (4, 10)]
    spell = {(3, 10): ("march", "day 10", "10 march"), (3, 1): ("march", "day 1", "1 march"),
             (4, 10): ("april", "day 10", "10 april")}
    r = Readers(candidates(values, [spell[v] for v in values]))
    assert r.cands[0].scopes["10 march"] == frozenset({0, 1}) and r.cands[0].required == frozenset({0, 1})
    assert r.scan(item(0, "The year starts on 10 March.")).counts == {0: 1}


def test_a_commit_is_read_without_its_diffs():
    commit = item(0, "config: the TTL is 417 s\n--- app/config.py\n@@\n-TTL = 300\n+TTL = 600", source="H")
    assert prose(commit) == "config: the TTL is 417 s"
    assert ttl_readers().scan(commit).counts == {1: 1}
    assert prose(item(1, "a\n--- b")) == "a\n--- b"  # only history items carry diffs


def test_top1_reads_the_best_hit_and_its_most_relevant_line():
    r = ttl_readers()
    items = [item(0, "Sessions expire after 600 s."),
             item(1, "Cache entries: the cache keeps entries 417 s.\nUnrelated: builds take 300 s."),
             item(2, "nothing about the cache entries here, no value")]
    assert pick(r, "reader-top1", items) == 417
    # Rank 1 mentions nothing: the next hit that does is read.
    items[1] = item(1, "cache entries expire, cache entries, cache entries")
    assert pick(r, "reader-top1", items) == 600
    # No item shares a term with the statement: they are read in corpus order.
    assert pick(r, "reader-top1", [item(0, "x 300"), item(1, "y 417")], statement="zzz") == 300


def test_latest_takes_the_latest_dated_mention():
    r = ttl_readers()
    items = [item(0, "2023-05-01: 600 s.\n2024-02-01: 417 s."), item(1, "300 s (undated)"),
             item(2, "cache: 4170", source="H")]
    assert pick(r, "reader-latest", items) == 417  # an undated mention is older than any dated one
    assert pick(r, "reader-latest", items, [None, None, "2024-06-01"]) == 4170  # a commit's own date
    assert pick(r, "reader-latest", [item(0, "300 s"), item(1, "600 s then 417 s")]) == 417  # ties: later item, position


def test_majority_counts_mentions_and_breaks_ties_by_the_first_mention():
    r = ttl_readers()
    assert pick(r, "reader-majority", [item(0, "417 s, then 300"), item(1, "300 seconds"), item(2, "417")]) == 417
    assert pick(r, "reader-majority", [item(0, "600 and 417"), item(1, "417 and 600")]) == 600
    assert pick(r, "reader-majority", [item(0, "nothing")]) is None


def test_no_candidate_no_pick_and_unknown_reader():
    r = ttl_readers()
    for reader in READERS:
        assert pick(r, reader, [item(0, "the cache entries have no number")]) is None
    with pytest.raises(ValueError, match="unknown reader 'reader-best'"):
        r.pick("reader-best", [], [], "x")


def test_rendered_items_parse_back_and_views_show_what_deliveries_show():
    items = [item(0, "first note: 417 s"), item(1, "fix: use 300\n\n[not a header]", source="H"),
             MemoryItem("F:.agent/preferences.md#2", "F", "- (review) x", "- (review) x 600")]
    injected = render_inject(items, "cache", 10_000).text
    assert parse_rendered(injected) == items
    assert parse_rendered(format_hits([])) == []
    views = delivery_views(items, [None, "2024-01-01", None], "first note cache", "The TTL is 417 s.")
    assert views["full"].dates == (None, "2024-01-01", None) and views["inject"].items == tuple(items)
    assert views["memtool"].ranked and views["memtool"].items[0] == items[0] and views["memtool"].dates[0] is None
    assert [i.text for i in views["oracle"].items] == ["A fact about this project that matters here: The TTL is 417 s."]
    r = ttl_readers()
    assert {rd: pick(r, rd, views["oracle"].items) for rd in READERS} == dict.fromkeys(READERS, 417)
