"""The memory corpus of a task, BM25 search over it, and the inject renderer.

Items come from the FULL repo (history and artifacts), whatever the delivery:

- H: one item per commit: its message plus the diffs of non-artifact files (code and tests);
  artifact diffs are left out because artifact content is K/F/X memory, not history. Hunk
  headers keep their function context but drop their line ranges.
- K: one item per knowledge file at HEAD (docs, ADRs, CONVENTIONS.md, AGENTS.md, other .md).
- F / X: one item per entry of `.agent/preferences.md` / `.agent/past_fixes.md`.

Entry rule for the `.agent/` files: the text is split into blocks at blank lines; a block made
only of headings is joined to the block after it (a heading labels what follows); a block of
several top-level list items ("- ", "* ", "1. ") is split into one entry per item, indented
continuation lines staying with their item.

Token counts use a documented estimate, ceil(chars / 4), so counts are reproducible without a
tokenizer download.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sdebench.tasks import repo as repo_mod
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES, artifact_kind

LABELS = ("H", "K", "F", "X")
_WORD = re.compile(r"[a-z0-9]+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
# Very common English words carry no signal for BM25 over short notes.
_STOP = "a an and are as at be by for from has have in is it its of on or that the this to was were will with"
STOPWORDS = frozenset(_STOP.split(" "))


@dataclass(frozen=True)
class MemoryItem:
    """One thing an agent could remember: a commit, a doc file or a note entry."""

    id: str  # e.g. "H:1a2b3c4", "K:docs/adr/0002.md", "F:.agent/preferences.md#3"
    source: str  # H | K | F | X
    title: str
    text: str

    def render(self) -> str:
        """The item as shown to an agent: a labelled header line, then the text."""
        return f"[{self.source}] {self.id} - {self.title}\n{self.text}".rstrip()


@dataclass(frozen=True)
class Hit:
    """One search result."""

    item: MemoryItem
    score: float


def estimate_tokens(text: str) -> int:
    """Estimated token count of `text`: ceil(chars / 4)."""
    return math.ceil(len(text) / 4)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric runs minus stopwords (so `HALF_DOWN` matches 'half down')."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


# --- building the corpus ---------------------------------------------------------------
def split_entries(text: str) -> list[str]:
    """Split a notes file into entries (see the module docstring for the rule)."""
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text) if b.strip()]
    entries: list[str] = []
    pending_heading = ""
    for block in blocks:
        lines = block.splitlines()
        if all(_HEADING.match(line) for line in lines):
            pending_heading = (pending_heading + "\n" + block).strip("\n")
            continue
        items = _list_items(lines)
        for item in items:
            entries.append((pending_heading + "\n" + item).strip("\n") if pending_heading else item)
        pending_heading = ""
    if pending_heading:
        entries.append(pending_heading)
    return entries


def _list_items(lines: list[str]) -> list[str]:
    """One string per top-level list item if the block is a list, else the whole block."""
    if not lines or not _LIST_ITEM.match(lines[0]):
        return ["\n".join(lines)]
    items: list[list[str]] = []
    for line in lines:
        if _LIST_ITEM.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return ["\n".join(i) for i in items]


_HUNK_RANGE = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)


def _commit_item(commit: repo_mod.HistoryCommit) -> MemoryItem:
    parts = [commit.message]
    for path, body in sorted(commit.diffs.items()):
        if artifact_kind(path) is None:
            # Hunk line ranges are positions, not memory: they would only add noise numbers.
            parts.append(f"--- {path}\n{_HUNK_RANGE.sub('@@', body)}")
    subject = commit.message.splitlines()[0] if commit.message else ""
    return MemoryItem(f"H:{commit.sha[:10]}", "H", subject, "\n".join(parts))


def corpus_from_repo(path: Path) -> list[MemoryItem]:
    """Every memory item of the full repo checked out at `path` (history, then files at HEAD)."""
    return corpus_of(repo_mod.history(path), repo_mod.read_tree(path))


def dated_corpus(path: Path) -> tuple[list[MemoryItem], list[str | None]]:
    """`corpus_from_repo` and each item's date: a commit's committer date (YYYY-MM-DD), None for files."""
    commits = repo_mod.history(path)
    items = corpus_of(commits, repo_mod.read_tree(path))
    return items, [c.date[:10] or None for c in commits] + [None] * (len(items) - len(commits))


def corpus_of(commits: list[repo_mod.HistoryCommit], tree: dict[str, str]) -> list[MemoryItem]:
    """The memory items of a history (oldest first) and the files at HEAD: one per commit, then per artifact."""
    items = [_commit_item(c) for c in commits]
    for rel, text in sorted(tree.items()):
        kind = artifact_kind(rel)
        if kind is None:
            continue
        if rel in (PREFERENCES, PAST_FIXES):
            for n, entry in enumerate(split_entries(text), 1):
                title = entry.splitlines()[0].lstrip("#-*+ ").strip()
                items.append(MemoryItem(f"{kind}:{rel}#{n}", kind, title, entry))
        else:
            items.append(MemoryItem(f"K:{rel}", "K", rel, text.rstrip("\n")))
    return items


_RENDERED = re.compile(r"^(?:#\d+ \(score [^)\n]*\) )?\[(H|K|F|X)\] ((?:H|K|F|X):\S*) - (.*)$", re.M)


def parse_rendered(text: str) -> list[MemoryItem]:
    """The memory items of a text that shows them rendered (`MemoryItem.render`): search results
    (`format_hits`) or an injection; what lies between two item headers is the first one's text."""
    heads = list(_RENDERED.finditer(text))
    items = []
    for n, m in enumerate(heads):
        body = text[m.end() + 1:heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        items.append(MemoryItem(m.group(2), m.group(1), m.group(3), body.strip("\n")))
    return items


# --- search ----------------------------------------------------------------------------
class MemoryIndex:
    """A BM25 index (bm25s) over a list of memory items."""

    def __init__(self, items: Iterable[MemoryItem]):
        import bm25s  # imported here: runs that use no memory tool never pay for it

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG

        self.items = list(items)
        self._bm25 = None
        docs = [tokenize(f"{i.title}\n{i.text}") or ["_empty_"] for i in self.items]
        if self.items:
            self._bm25 = bm25s.BM25()
            self._bm25.index(docs, show_progress=False)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The top `k` items for `query`, best first; items with no matching term are left out."""
        terms = tokenize(query)
        if self._bm25 is None or not terms or k <= 0:
            return []
        scores = self._bm25.get_scores(terms)
        order = sorted(range(len(self.items)), key=lambda i: (-float(scores[i]), i))
        return [Hit(self.items[i], float(scores[i])) for i in order[:k] if scores[i] > 0]


def format_hits(hits: list[Hit], max_chars_per_item: int = 4000) -> str:
    """Search results as tool output: one labelled block per hit, best first."""
    if not hits:
        return "No memory items match the query."
    blocks = []
    for rank, hit in enumerate(hits, 1):
        text = hit.item.render()
        if len(text) > max_chars_per_item:
            text = text[:max_chars_per_item] + f"\n[... {len(text) - max_chars_per_item} chars truncated ...]"
        blocks.append(f"#{rank} (score {hit.score:.2f}) {text}")
    return "\n\n".join(blocks)


# --- inject ----------------------------------------------------------------------------
INJECT_HEADER = (
    "Project memory: commit history [H], project docs [K], a user's past corrections [F] and notes "
    "from earlier fixes [X] of this repository. The repository itself has no history or docs."
)


@dataclass(frozen=True)
class Injection:
    """The memory text pushed into a prompt and what it cost."""

    text: str
    tokens: int
    mode: str  # "all" (whole corpus fits) | "top_k" (best items for the statement) | "empty"
    items: tuple[str, ...]  # ids of the items included


def render_inject(
    items: list[MemoryItem], statement: str, token_budget: int = 8000, top_k: int = 10, index: MemoryIndex | None = None
) -> Injection:
    """The whole corpus if it fits `token_budget`, else the top items for `statement` that fit."""
    if not items:
        return Injection("", 0, "empty", ())
    whole = _join(items)
    if estimate_tokens(whole) <= token_budget:
        return Injection(whole, estimate_tokens(whole), "all", tuple(i.id for i in items))
    index = index or MemoryIndex(items)
    chosen: list[MemoryItem] = []
    for hit in index.search(statement, top_k):
        if estimate_tokens(_join([*chosen, hit.item])) > token_budget:
            continue
        chosen.append(hit.item)
    if not chosen:
        return Injection("", 0, "empty", ())
    text = _join(chosen)
    return Injection(text, estimate_tokens(text), "top_k", tuple(i.id for i in chosen))


def _join(items: list[MemoryItem]) -> str:
    return INJECT_HEADER + "\n\n" + "\n\n".join(i.render() for i in items)
