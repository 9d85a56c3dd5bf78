"""The decisive memory items of a task: the one definition, used on the host only.

A task's decisive items are the memory items (sdebench.delivery.memory: one per commit, knowledge
file or `.agent` note entry) of the task's pristine repo whose source is the task's source and
whose title or text contains one of its fact tokens (the normalised comparison of the leak checks,
`sdebench.tasks.tokens.find_tokens`). Generation rule 1 makes that the fact-bearing commit(s)
of an H placement, the doc/ADR of a K placement and the note entry of an F or X placement; a
`none` placement has none. Memory carried in from earlier tasks of a stream is never decisive.

Each item also keeps its *fact lines*: the normalised lines of its text that carry a fact token
(lines shorter than `MIN_LINE` chars are dropped when longer ones exist, so a bare `34,` does not
match any output that happens to contain it). An output *shows* the item when its normalised text
contains one of them.

This is answer-key material: it names the fact's location. It is computed beside the episode and
written only to the episode record (sdebench.runs.retrieval); nothing here reaches the sandbox,
the prompt or a tool output.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sdebench.delivery.memory import MemoryItem, corpus_from_repo
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task
from sdebench.tasks.tokens import find_tokens, normalise

MIN_LINE = 12


@dataclass(frozen=True)
class Decisive:
    """One fact-bearing memory item and where it lives in the full repo."""

    id: str  # the MemoryItem id: "H:<sha10>", "K:<path>", "F:.agent/preferences.md#n", ...
    source: str  # H | K | F | X
    path: str | None  # the file holding it (K, F, X); None for a commit
    sha: str | None  # the full commit sha (H); None for a file
    lines: tuple[str, ...]  # its normalised fact lines

    def shown_in(self, output: str) -> bool:
        """Whether `output` (as shown to an agent) contains one of this item's fact lines."""
        norm = normalise(output)
        return any(line in norm for line in self.lines)


def fact_lines(text: str, tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The normalised lines of `text` that carry a fact token (short ones only if no long one does)."""
    lines = [normalise(line) for line in text.splitlines()]
    hits = [line for line in lines if line and find_tokens(line, tokens)]
    long = [line for line in hits if len(line) >= MIN_LINE]
    return tuple(dict.fromkeys(long or hits))


def of_items(items: list[MemoryItem], task: Task, shas: dict[str, str] | None = None) -> tuple[Decisive, ...]:
    """The decisive items among `items` of `task`'s repo (`shas`: short commit id -> full sha)."""
    if task.source not in ("H", "K", "F", "X") or not task.fact_tokens:
        return ()
    out = []
    for item in items:
        if item.source != task.source or ":carried#" in item.id:
            continue
        if not find_tokens(f"{item.title}\n{item.text}", task.fact_tokens):
            continue
        ref = item.id.split(":", 1)[1]
        path = None if item.source == "H" else ref.split("#", 1)[0]
        sha = (shas or {}).get(ref, ref) if item.source == "H" else None
        out.append(Decisive(item.id, item.source, path, sha, fact_lines(item.text, task.fact_tokens)))
    return tuple(out)


@lru_cache(maxsize=64)
def _cached(bundle: str, size: int, mtime_ns: int, task: Task) -> tuple[Decisive, ...]:
    tmp = Path(tempfile.mkdtemp(prefix="dec-"))
    try:
        full = repo_mod.unbundle(Path(bundle), tmp / "r")
        shas = {c.sha[:10]: c.sha for c in repo_mod.history(full)}
        return of_items(corpus_from_repo(full), task, shas)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def decisive_items(task: Task) -> tuple[Decisive, ...]:
    """The decisive memory items of `task` (read from its bundle; cached per bundle file)."""
    if task.source not in ("H", "K", "F", "X") or not task.fact_tokens:
        return ()
    st = task.bundle.stat()
    return _cached(str(task.bundle.resolve()), st.st_size, st.st_mtime_ns, task)


def in_workspace(d: Decisive, workspace: Path) -> bool:
    """Whether the agent's workspace holds the item: its commit object, or its file with a fact line."""
    if d.sha is not None:
        try:
            repo_mod._git(workspace, "cat-file", "-e", f"{d.sha}^{{commit}}")
        except Exception:  # noqa: BLE001 - no repo, or no such commit: not there
            return False
        return True
    p = workspace / (d.path or "")
    if not p.is_file():
        return False
    try:
        return d.shown_in(p.read_text(errors="replace"))
    except OSError:
        return False
