"""Retrieval diagnostics of an episode: did the decisive memory item reach the agent, and how?

Only a synthetic benchmark can say this, because only here is the decisive item known
(sdebench.delivery.decisive). Everything is computed on the host, beside the agent's tool calls
(the toolbox tells the `RetrievalTracker` of each call and each search) and from what the delivery
prepared; the result is written only to the episode record's `retrieval` field. Definitions
(docs/retrieval.md):

- available: the delivery gave the agent a route to a decisive item: it is in the workspace
  (its commit object, or its file with a fact line), loaded into the memory system, or injected.
- searches / best_rank: per search call of the memory system (BM25's `memory_search`, a knowledge
  graph's `search_nodes`, ...), the tool, the query and the 1-based rank of the first decisive item
  among the items the answer showed (for mem0: the item a returned memory was derived from; None:
  not returned); best_rank is the best over the episode.
- injected: whether a decisive item made the inject budget (None: the delivery injects nothing).
- touched: a tool output shown to the agent (after truncation) contained a fact line of a decisive
  item: `git log -p`/`git show` of the fact commit, `cat`/`grep`/`read_file` of the doc, ADR or
  note, or a search hit. touched_at is the 1-based number of that tool call, touched_by its tool.
- observed: `all` when every agent action goes through the toolbox (built-in and reference
  agents); `partial` for agents that run their own program in the sandbox (installed CLIs), whose
  own shell commands and file reads sdebench does not see: for them a touch that is not seen is
  unknown (touched None), not false.
- retrieved: injected, or returned by a search, or touched; None when nothing positive was seen
  and observation was partial; False otherwise.
- fact_in_diff: a line the final diff adds carries a fact token (the fact was used in the fix).
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

MAX_QUERY = 200  # chars of a query kept in the record


@dataclass
class Search:
    """One memory search call as the host saw it."""

    query: str  # the query (first MAX_QUERY chars)
    k: int | None  # hits asked for (None: the tool has no such argument, or the agent left it out)
    hits: int  # items returned
    rank: int | None  # 1-based rank of the first decisive item among them, else None
    tool: str = "memory_search"  # the memory system's tool that searched


@dataclass
class Retrieval:
    """Whether and how the decisive memory item reached the agent in one episode."""

    decisive: list[str] = field(default_factory=list)  # ids of the task's decisive memory items
    available: bool = False  # the delivery gave a route to one (workspace, index or injection)
    in_workspace: bool = False
    searchable: bool = False  # a decisive item is in the memory_search index
    injected: bool | None = None  # a decisive item made the inject budget (None: nothing injected by design)
    searches: list[Search] = field(default_factory=list)
    best_rank: int | None = None
    touched: bool | None = False
    touched_at: int | None = None  # 1-based number of the tool call that first showed it
    touched_by: str | None = None  # that call's tool
    observed: str = "all"  # all | partial
    retrieved: bool | None = False
    fact_in_diff: bool = False
    note: str | None = None  # why part of the diagnostics could not be computed

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of these diagnostics."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Retrieval:
        """Diagnostics from their JSON object; unknown keys are ignored, a bad field raises ValueError."""
        if not isinstance(d, dict):
            raise ValueError("retrieval must be an object")
        known = {f.name: f for f in fields(cls)}
        vals = {k: v for k, v in d.items() if k in known}
        searches = vals.get("searches", [])
        if not isinstance(searches, list) or not all(isinstance(s, dict) for s in searches):
            raise ValueError("retrieval.searches must be a list of objects")
        vals["searches"] = [Search(**{k: s.get(k) for k in ("query", "k", "hits", "rank")}, tool=s.get("tool") or "memory_search")
                            for s in searches]
        for k, f in known.items():
            if k not in vals and f.default is MISSING and f.default_factory is MISSING:
                raise ValueError(f"retrieval lacks {k!r}")
        return cls(**vals)


class RetrievalTracker:
    """Watches one episode's toolbox for the decisive items of its task (host side; never raises)."""

    def __init__(self, decisive: tuple, *, workspace: Path | None, memory: Any = None, injected_ids: tuple[str, ...] | None = None,
                 partial: bool = False):
        from sdebench.delivery.decisive import in_workspace

        self.decisive = tuple(decisive)
        ids = {d.id for d in self.decisive}
        self.ids = ids
        self.calls = 0
        r = Retrieval(decisive=sorted(ids), observed="partial" if partial else "all")
        try:
            r.in_workspace = workspace is not None and any(in_workspace(d, workspace) for d in self.decisive)
            r.searchable = memory is not None and bool(ids & memory.holds())
            if injected_ids is not None:
                r.injected = bool(ids & set(injected_ids))
        except Exception as e:  # noqa: BLE001 - a diagnostic failure must not fail the episode
            r.note = f"{type(e).__name__}: {e}"
        r.available = bool(r.in_workspace or r.searchable or r.injected)
        self.result = r

    def tool(self, name: str, arguments: Any, output: str, error: bool) -> None:
        """One tool call and the output the agent got."""
        self.calls += 1
        r = self.result
        if r.touched or not self.decisive or not isinstance(output, str):
            return
        try:
            if any(d.shown_in(output) for d in self.decisive):
                r.touched, r.touched_at, r.touched_by = True, self.calls, name
        except Exception as e:  # noqa: BLE001
            r.note = f"{type(e).__name__}: {e}"

    def searched(self, tool: str, query: Any, items: list[str], k: int | None = None) -> None:
        """One memory search and the ids of the items it showed, best first."""
        rank = next((n for n, i in enumerate(items, 1) if i in self.ids), None)
        self.result.searches.append(Search(str(query)[:MAX_QUERY], k, len(items), rank, tool))
        best = self.result.best_rank
        if rank is not None and (best is None or rank < best):
            self.result.best_rank = rank

    def finish(self, final_diff: str, fact_tokens: tuple[str, ...]) -> Retrieval:
        """The episode's diagnostics, once its final diff is known."""
        from sdebench.tasks.tokens import find_tokens

        r = self.result
        added = "\n".join(line[1:] for line in final_diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
        r.fact_in_diff = bool(fact_tokens) and bool(find_tokens(added, fact_tokens))
        if r.observed == "partial" and not r.touched and r.in_workspace:
            r.touched = None  # its own commands may have read it unseen
        positive = bool(r.injected) or r.best_rank is not None or bool(r.touched)
        r.retrieved = True if positive else (None if r.observed == "partial" and r.in_workspace else False)
        return r
