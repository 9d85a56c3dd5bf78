"""The naive memory readers: memory used the naive way, the reference points of the hard tier.

A naive reader knows a family's candidates (its fact space) and how each is spelled in memory text
(`Family.spellings`), reads a list of memory items (`MemoryItem`), each with a date or none, and
picks one candidate, which it then applies with the family's renderer. Generation rule 8 requires
every hard-tier task to defeat each of them, and the agents `reader-top1`, `reader-latest` and
`reader-majority` (sdebench.agents.readers) apply the same rules to what a delivery shows them.

What is read. A commit is read as its message: the diffs that follow it in a history item are
code, and the values in code (the buggy one at HEAD, the one a refactor replaced) are what the bug
is about, not a memory of the fact. Any other item is read whole.

Mentions. A candidate's spelling occurs in an item where its normalised form (case-folded,
whitespace collapsed) is found in the item's normalised text at word boundaries: the leak checks'
rule (`sdebench.tasks.tokens.token_pattern`). Occurrences inside an ISO date (`2024-03-01`)
are not mentions (a date's digits are no value). Where occurrences of several spellings overlap,
the longest wins (ties: the earlier start, then the spelling's text); each surviving occurrence is a
*mention* of its spelling.

Parts. A fact may have several parts (a rate and a rounding side): a candidate whose value is a
tuple of n > 1 components. The *scope* of one of its spellings is the smallest set of components
(ties: the one the most candidates agree on, then the first in order) on which every candidate
that agrees with it has that spelling too:
`half down` reveals the rounding side, `0.25%` the rate, `10 March` the month and the day at once.
The *required parts* are the components some spelling reveals alone. An item *mentions* the
candidate only if its mentions of the candidate's spellings cover every required part (a candidate
with none, such as an order of six names spelled only in pairs, needs one mention); it does so as
often as its least-mentioned required part is mentioned (else as often as any of its spellings).
Among the candidates an item mentions, one whose mentions there are a strict subset of another's
is not mentioned by it (the item spells out the other: the rate and the side, not the side alone).

Dates. A mention's date is the nearest valid ISO date (`YYYY-MM-DD`) written before it in the same
item, else the item's own date (a commit's date, for history read from a repo), else none; an
undated mention is older than any dated one.

The readers (no candidate found: no pick, and the agent makes no change):

- `reader-top1`: BM25 (`MemoryIndex`) search of the items with the statement (the items it does
  not score follow in corpus order; search results handed over ranked are read in their order);
  in the best hit that mentions a candidate (rank 1, else the next such hit), the mention on the
  item's line holding the most distinct statement terms (ties: the first mention).
- `reader-latest`: the mention with the latest date over all items (ties: the later item in
  corpus order, then the later position).
- `reader-majority`: the candidate mentioned most often over all items (ties: the earlier first
  mention).

A mention shared by several mentioned candidates (a spelling of a part they share) is decided
between them by the rule's next criterion applied to each one's own mentions (top1: the most
mentions on that line, then in the item; latest: the next-latest mention; majority: as above),
and finally by the order of the fact space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date as _date
from typing import Any

from sdebench.delivery.memory import MemoryIndex, MemoryItem, tokenize
from sdebench.tasks.tokens import normalise, token_pattern

READERS = ("reader-top1", "reader-latest", "reader-majority")
_ISO = re.compile(r"(?<![0-9])(\d{4})-(\d{2})-(\d{2})(?![0-9])")


@dataclass(frozen=True)
class Candidate:
    """One candidate of a fact space: its value, its position in the space, its spellings with the
    parts (components of the value) each one reveals, and the parts a mention must cover."""

    index: int
    value: Any
    scopes: dict[str, frozenset[int]]  # normalised spelling -> the components it reveals
    required: frozenset[int]  # the components that have spellings of their own (empty: any mention will do)

    @property
    def spellings(self) -> frozenset[str]:
        """Every normalised spelling of the candidate."""
        return frozenset(self.scopes)

    def count(self, per_spelling: dict[str, int]) -> int:
        """How often an item whose mentions are `per_spelling` (spelling -> count) mentions the
        candidate: the mentions of its least-mentioned required part (0: a part is missing)."""
        mine = {s: n for s, n in per_spelling.items() if s in self.scopes}
        if not self.required:
            return sum(mine.values())
        return min(sum(n for s, n in mine.items() if i in self.scopes[s]) for i in self.required)


def _key(value: Any) -> str:
    return repr(value)  # components may be unhashable (lists): compared by their repr


def candidates(values: Sequence[Any], spellings: Sequence[Sequence[str]]) -> list[Candidate]:
    """The candidates of a fact space (values in declaration order) with the parts each spelling
    reveals (module docstring, "Parts")."""
    from itertools import combinations

    if len(values) != len(spellings):
        raise ValueError(f"{len(values)} candidates but {len(spellings)} spelling lists")
    spelled = [frozenset(n for n in (normalise(s) for s in ss) if n) for ss in spellings]
    widths = {len(v) if isinstance(v, tuple) else 1 for v in values}
    n = widths.pop() if len(widths) == 1 else 1
    everything = frozenset(range(n))
    # Smaller sets of components first: a spelling's scope is the first set on which every candidate
    # that agrees with it has it.
    subsets = [frozenset(j) for size in range(1, n) for j in combinations(range(n), size)]
    shared: dict[frozenset[int], dict[str, frozenset[str]]] = {}
    size: dict[frozenset[int], dict[str, int]] = {}
    for j in subsets:
        groups, sizes = shared.setdefault(j, {}), size.setdefault(j, {})
        for v, ss in zip(values, spelled, strict=True):
            k = _key(tuple(v[i] for i in sorted(j)))
            groups[k] = groups[k] & ss if k in groups else ss
            sizes[k] = sizes.get(k, 0) + 1
    out = []
    for idx, (v, ss) in enumerate(zip(values, spelled, strict=True)):
        keys = {j: _key(tuple(v[i] for i in sorted(j))) for j in subsets}
        scopes = {}
        for sp in sorted(ss):
            # The fewest components; among as few, those the most candidates agree on (a candidate
            # alone with its value of a component would have every spelling "revealed" by it).
            fits = [(len(j), -size[j][keys[j]], k, j) for k, j in enumerate(subsets) if sp in shared[j][keys[j]]]
            scopes[sp] = min(fits)[3] if fits else everything
        required = frozenset(next(iter(j)) for j in scopes.values() if len(j) == 1) if n > 1 else \
            (everything if ss else frozenset())
        out.append(Candidate(idx, v, scopes, required))
    return out


@dataclass(frozen=True)
class Mention:
    """One surviving occurrence of a spelling in an item."""

    item: int  # position of the item in the list read
    start: int  # offset in the item's normalised text
    spelling: str  # normalised
    date: str  # ISO date, "" when undated


@dataclass
class Scan:
    """What one item holds: its mentions (by start) and the candidates it mentions, with their counts."""

    text: str  # what is read of the item (`prose`)
    norm: str
    mentions: list[tuple[int, int, str]]  # (start, end, spelling), by start
    dates: list[tuple[int, str]]  # (end offset, ISO date) of each valid date written in the item
    counts: dict[int, int] = field(default_factory=dict)  # candidate index -> times mentioned (all parts present)


class Readers:
    """The readers over one fact space: scans items (memoised by text) and picks candidates."""

    def __init__(self, cands: Sequence[Candidate]):
        self.cands = list(cands)
        self.by_spelling: dict[str, list[int]] = {}
        for c in self.cands:
            for s in sorted(c.spellings):
                self.by_spelling.setdefault(s, []).append(c.index)
        self.spelled = [c.spellings for c in self.cands]
        # Longest first: the substring pre-check is cheap, the regex only decides boundaries.
        self.spellings = sorted(self.by_spelling, key=lambda s: (-len(s), s))
        self._memo: dict[str, Scan] = {}

    # --- mentions ----------------------------------------------------------------------------------
    def scan(self, item: MemoryItem) -> Scan:
        """The mentions and mentioned candidates of an item (memoised by what is read of it)."""
        text = prose(item)
        hit = self._memo.get(text)
        if hit is not None:
            return hit
        norm = normalise(text)
        dates = []
        spans = []
        for m in _ISO.finditer(norm):
            try:
                _date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            except ValueError:
                continue
            dates.append((m.end(), m.group(0)))
            spans.append((m.start(), m.end()))
        found = []
        for s in self.spellings:
            if s in norm:
                found += [(m.start(), m.end(), s) for m in token_pattern(s).finditer(norm)
                          if not any(a < m.end() and m.start() < b for a, b in spans)]
        found.sort(key=lambda f: (-(f[1] - f[0]), f[0], f[2]))
        kept: list[tuple[int, int, str]] = []
        for f in found:
            if not any(a < f[1] and f[0] < b for a, b, _ in kept):
                kept.append(f)
        kept.sort()
        scan = Scan(text, norm, kept, dates)
        per_spelling: dict[str, int] = {}
        for _, _, s in kept:
            per_spelling[s] = per_spelling.get(s, 0) + 1
        touched = sorted({i for s in per_spelling for i in self.by_spelling[s]})
        owned: dict[int, frozenset[int]] = {}  # candidate -> the positions (in `kept`) of its mentions
        for i in touched:
            n = self.cands[i].count(per_spelling)
            if n:
                scan.counts[i] = n
                owned[i] = frozenset(k for k, (_, _, s) in enumerate(kept) if s in self.spelled[i])
        # A candidate whose mentions here are a strict subset of another mentioned candidate's is
        # not mentioned by the item: the other is what the item spells out (a rate and its side,
        # not the side alone).
        sets = set(owned.values())
        for i, mine in owned.items():
            if any(mine < other for other in sets):
                del scan.counts[i]
        self._memo[text] = scan
        return scan

    def mentions(self, items: Sequence[MemoryItem], dates: Sequence[str | None]) -> dict[int, list[Mention]]:
        """Candidate index -> its mentions over the items (only in items that mention it), in reading order."""
        out: dict[int, list[Mention]] = {}
        for n, (item, own) in enumerate(zip(items, dates, strict=True)):
            scan = self.scan(item)
            for start, _, s in scan.mentions:
                written = [d for end, d in scan.dates if end <= start]
                when = written[-1] if written else (own or "")
                for i in self.by_spelling[s]:
                    if i in scan.counts:
                        out.setdefault(i, []).append(Mention(n, start, s, when))
        return out

    # --- the readers --------------------------------------------------------------------------------
    def latest(self, items: Sequence[MemoryItem], dates: Sequence[str | None]) -> Candidate | None:
        """`reader-latest`: the candidate of the latest-dated mention."""
        ms = self.mentions(items, dates)
        if not ms:
            return None
        key = {i: sorted(((m.date, m.item, m.start) for m in v), reverse=True) for i, v in ms.items()}
        return self.cands[max(ms, key=lambda i: (key[i], -i))]

    def majority(self, items: Sequence[MemoryItem], dates: Sequence[str | None]) -> Candidate | None:
        """`reader-majority`: the candidate mentioned most often (ties: the earlier first mention)."""
        ms = self.mentions(items, dates)
        if not ms:
            return None
        total: dict[int, int] = {}
        for item in items:
            for i, n in self.scan(item).counts.items():
                total[i] = total.get(i, 0) + n
        first = {i: min((m.item, m.start) for m in v) for i, v in ms.items()}
        return self.cands[min(ms, key=lambda i: (-total[i], first[i], i))]

    def top1(self, items: Sequence[MemoryItem], statement: str, ranked: bool = False) -> Candidate | None:
        """`reader-top1`: the statement's best BM25 hit that mentions a candidate, and the mention on
        its line with the most statement terms. `ranked`: the items are already search results, best first."""
        order = list(items) if ranked else ranking(items, statement)
        terms = set(tokenize(statement))
        for item in order:
            scan = self.scan(item)
            if not scan.counts:
                continue
            lines = scan.text.split("\n")
            line_of = _line_map(scan.text, scan.norm)
            score = [len(terms & set(tokenize(line))) for line in lines]
            best = None
            for start, _, s in scan.mentions:
                owners = [i for i in self.by_spelling[s] if i in scan.counts]
                if owners and (best is None or score[line_of(start)] > best[0]):
                    best = (score[line_of(start)], start, owners)
            _, start, owners = best
            line = line_of(start)
            on_line = {i: sum(1 for a, _, s in scan.mentions if line_of(a) == line and s in self.spelled[i])
                       for i in owners}
            return self.cands[min(owners, key=lambda i: (-on_line[i], -scan.counts[i], i))]
        return None

    def pick(self, reader: str, items: Sequence[MemoryItem], dates: Sequence[str | None], statement: str,
             ranked: bool = False) -> Candidate | None:
        """The pick of `reader` (one of READERS) over `items` (`ranked`: search results, best first)."""
        if reader == "reader-top1":
            return self.top1(items, statement, ranked)
        if reader == "reader-latest":
            return self.latest(items, dates)
        if reader == "reader-majority":
            return self.majority(items, dates)
        raise ValueError(f"unknown reader {reader!r} (choose {', '.join(READERS)})")


_DIFF = re.compile(r"^--- \S", re.M)


def prose(item: MemoryItem) -> str:
    """What a reader reads of an item: a commit's message without its diffs (a diff is code, and
    the code's values are what the bug is about, not memory of them), any other item whole."""
    if item.source != "H":
        return item.text
    m = _DIFF.search(item.text)
    return item.text[:m.start()].rstrip("\n") if m else item.text


def ranking(items: Sequence[MemoryItem], statement: str) -> list[MemoryItem]:
    """The items in the order a BM25 search for `statement` ranks them; those it does not score
    (no term in common) follow in corpus order."""
    hits = MemoryIndex(items).search(statement, len(items))
    found = {id(h.item) for h in hits}
    return [h.item for h in hits] + [i for i in items if id(i) not in found]


def _line_map(text: str, norm: str) -> Callable[[int], int]:
    """Offset in `normalise(text)` -> the line of `text` it comes from (built on first use)."""
    table: list[int] = []

    def line_of(offset: int) -> int:
        if not table:
            line, pending = 0, False
            for ch in text:
                if ch.isspace():
                    line += ch == "\n"
                    pending = bool(table)
                    continue
                if pending:
                    table.append(line)  # a collapsed run of whitespace counts on the line of what follows
                    pending = False
                table.extend([line] * len(ch.casefold()))
            if len(table) != len(norm):  # casefold changed a boundary: fall back to one line
                table[:] = [0] * max(len(norm), 1)
        return table[min(offset, len(table) - 1)]

    return line_of


# --- what each delivery shows a reader ------------------------------------------------------------

VIEWS = ("full", "memtool", "inject", "oracle")  # the deliveries with memory (squashed has none)


@dataclass(frozen=True)
class View:
    """The memory items one delivery shows a reader, each with its date, and whether they are ranked."""

    items: tuple[MemoryItem, ...]
    dates: tuple[str | None, ...]
    ranked: bool = False  # search results, best first (top1 reads them in this order)


def delivery_views(items: Sequence[MemoryItem], dates: Sequence[str | None], statement: str, fact: str, *,
                   memtool_k: int = 5, inject_budget: int = 8000, inject_top_k: int = 10,
                   max_output_chars: int = 16_000) -> dict[str, View]:
    """What a reader agent gets from each delivery with memory, from the full repo's dated corpus,
    through the same texts the agent reads (defaults: the deliveries' and tools' configs):

    - full: every item, a commit dated by its committer date (the agent reads the repo's history);
    - memtool: the `memory_search` output for the statement (top `memtool_k`, as the tool truncates
      it), parsed back into items, undated (search results carry no commit date), ranked;
    - inject: the injected text parsed back into items, undated;
    - oracle: the fact sentence as one item.
    """
    from sdebench.agents.tools import truncate
    from sdebench.delivery.memory import format_hits, parse_rendered, render_inject
    from sdebench.delivery.modes import oracle_addition

    def undated(found: list[MemoryItem], ranked: bool = False) -> View:
        return View(tuple(found), (None,) * len(found), ranked)

    index = MemoryIndex(items)
    searched = truncate(format_hits(index.search(statement, memtool_k)), max_output_chars)
    injected = render_inject(list(items), statement, inject_budget, inject_top_k, index).text
    return {
        "full": View(tuple(items), tuple(dates)),
        "memtool": undated(parse_rendered(searched), ranked=True),
        "inject": undated(parse_rendered(injected)),
        "oracle": undated([MemoryItem("oracle", "K", "fact", oracle_addition(fact))]),
    }


def picks(readers: Readers, views: dict[str, View], statement: str) -> dict[tuple[str, str], Candidate | None]:
    """(reader, view) -> the reader's pick over that view."""
    return {(r, name): readers.pick(r, v.items, v.dates, statement, v.ranked)
            for name, v in views.items() for r in READERS}


@dataclass(frozen=True)
class Judged:
    """One reader's pick over one delivery's view, judged against the variant's fact."""

    reader: str
    view: str
    pick: str | None  # repr of the picked value; None: no candidate found (no change)
    resolves: bool  # the pick's fix resolves when the variant's fact holds


def judge(space: Any, items: Sequence[MemoryItem], dates: Sequence[str | None], statement: str,
          fact: str, readers: Readers | None = None) -> list[Judged]:
    """Every reader's pick over every delivery's view of one task's memory, judged by the probe's
    runs (`space`: a `sdebench.generation.probe.ReaderSpace`): a pick resolves iff its fix passes
    every test under the variant's fact."""
    readers = readers or Readers(candidates(space.values, space.spellings))
    views = delivery_views(items, dates, statement, fact)
    out = []
    for (reader, view), c in picks(readers, views, statement).items():
        out.append(Judged(reader, view, None if c is None else repr(c.value),
                          c is not None and c.index in space.resolving))
    return out
