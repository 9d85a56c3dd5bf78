"""The five delivery modes: how memory reaches the agent (docs/design.md, 'Vocabulary').

Each mode prepares, for one task, the agent's workspace (a git repo on the host), the text added
to the agent's prompt, and the names of the tools the agent gets. The code and visible tests are
identical in every mode; only history and memory artifacts differ.

- full: the unbundled repo with its history and every artifact, standard tools.
- squashed: one fresh commit of HEAD with every memory artifact removed.
- memtool: squashed + the tools of a memory system (sdebench.memory; BM25's `memory_search` by default)
  loaded with the memory corpus of the full repo.
- inject: squashed + the memory corpus (or its best items for the statement) in the prompt.
- oracle: squashed + the fact sentence in the prompt (upper bound).

Memory carried from earlier tasks of a stream (sdebench.delivery.carried) is passed to `prepare` as
data and applied like the task's own F/X memory: full writes it into the workspace's `.agent/`
files, memtool and inject add it to the corpus, squashed and oracle leave it out.

Modes are selected by `delivery.name` (a name registered in sdebench.components, or a
`package.module:Class` of your own with the same `prepare`) and built with the section's other
keys as options.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sdebench.delivery.backend import WRITE
from sdebench.delivery.bm25 import Bm25Memory
from sdebench.delivery.carried import CarriedMemory, replay_calls, write_into
from sdebench.delivery.memory import MemoryItem, corpus_from_repo, render_inject
from sdebench.errors import DeliveryError
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

STANDARD_TOOLS = ("bash", "read_file", "edit_file", "write_file", "run_tests", "submit")
MEMORY_TOOL = "memory_search"
WORKSPACE = "repo"  # a neutral name: nothing in the workspace path names the task
MEMORY_STATE = "memory"  # the memory system's state dir, beside the workspace (never inside it)
FULL_CLONE = "full-clone"


@dataclass
class Prepared:
    """What a delivery mode hands to the episode."""

    workspace: Path
    prompt_additions: list[str]
    tools: tuple[str, ...]
    memory: Any = None  # the memory system the tools search (sdebench.delivery.backend.MemoryBackend), loaded
    info: dict[str, Any] = field(default_factory=dict)  # e.g. injected tokens, corpus size
    injected: tuple[str, ...] | None = None  # ids of the memory items pushed into the prompt (None: the mode injects none)


class Delivery(Protocol):
    """One delivery mode."""

    name: str

    def prepare(self, task: Task, work_dir: Path, carried: CarriedMemory | None = None) -> Prepared:
        """Build the workspace under `work_dir` and the agent's prompt additions and tools."""
        ...


def _carried_info(carried: CarriedMemory | None, delivered: bool) -> dict[str, Any]:
    """What the episode record says about carried memory (nothing when there is none)."""
    if carried is None or not carried.entries:
        return {}
    return {"carried_items": len(carried.entries), "carried_tokens": carried.tokens(), "carried_delivered": delivered}


def _full_clone(task: Task, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    return repo_mod.unbundle(task.bundle, dest)


def _squashed(task: Task, work_dir: Path, keep_corpus: bool) -> tuple[Path, list[MemoryItem]]:
    """Squash the full repo into work_dir/workspace; the corpus is read from the full clone first."""
    full = _full_clone(task, work_dir / FULL_CLONE)
    try:
        items = corpus_from_repo(full) if keep_corpus else []
        ws = work_dir / WORKSPACE
        repo_mod.squash(full, ws, drop=task.memory_artifacts)
    finally:
        shutil.rmtree(full, ignore_errors=True)
    return ws, items


@dataclass
class Full:
    """The repo as it is: history, artifacts, standard tools."""

    name: str = "full"

    def prepare(self, task: Task, work_dir: Path, carried: CarriedMemory | None = None) -> Prepared:
        """Unbundle the repo into the workspace; carried entries go into its `.agent/` files."""
        ws = _full_clone(task, work_dir / WORKSPACE)
        if carried is not None and carried.entries:
            write_into(ws, carried)
            repo_mod.neutralize(ws)  # the carried-memory commit left a reflog entry
        return Prepared(ws, [], STANDARD_TOOLS, info=_carried_info(carried, True))


@dataclass
class Squashed:
    """HEAD code only: no history, no memory artifacts."""

    name: str = "squashed"

    def prepare(self, task: Task, work_dir: Path, carried: CarriedMemory | None = None) -> Prepared:
        """A single-commit workspace without memory artifacts (carried memory is left out too)."""
        ws, _ = _squashed(task, work_dir, keep_corpus=False)
        return Prepared(ws, [], STANDARD_TOOLS, info=_carried_info(carried, False))


@dataclass
class Memtool:
    """Squashed + the tools of a memory system loaded with the full repo's memory (BM25 by default)."""

    name: str = "memtool"
    default_k: int = 5
    memory: Any = None  # the memory system (sdebench.delivery.backend.MemoryBackend), one per episode; None: BM25

    def __post_init__(self) -> None:
        if self.memory is None:
            self.memory = Bm25Memory(default_k=self.default_k)

    def prepare(self, task: Task, work_dir: Path, carried: CarriedMemory | None = None) -> Prepared:
        """A squashed workspace and the memory system loaded with the corpus of the full repo plus carried
        entries; a system that cannot be loaded fails the episode (MemoryLoadError), never an empty memory."""
        ws, items = _squashed(task, work_dir, keep_corpus=True)
        backend = self.memory
        try:
            # what the agent wrote on earlier tasks of a stream is replayed through the system's own write
            # tools once the corpus is in; if the system lacks such a tool (another system wrote it, or its
            # write tools are off) it is loaded afresh with those writes as items (their text) instead
            carried_items = carried.items() if carried is not None else []
            calls = replay_calls(carried) if carried is not None else []
            written = [i for i in carried_items if i.id.startswith("X:written#")]
            as_items = [i for i in carried_items if i not in written]
            report = backend.load(items + as_items, work_dir / MEMORY_STATE)
            writable = {t.name for t in backend.tools() if t.kind == WRITE}
            if any(tool not in writable for tool, _ in calls):
                backend.close()
                shutil.rmtree(work_dir / MEMORY_STATE, ignore_errors=True)
                as_items += [i for i, (tool, _) in zip(written, calls, strict=True) if tool not in writable]
                report = backend.load(items + as_items, work_dir / MEMORY_STATE)
            replay = [(tool, args) for tool, args in calls if tool in writable]
            failed = 0
            for tool, arguments in replay:
                # the agent wrote these calls: one the system refuses is skipped and counted, never an error of
                # this episode (else an earlier task's writes could take a later one out of the rates)
                try:
                    failed += backend.call(tool, arguments).error
                except Exception:  # noqa: BLE001 - see above
                    failed += 1
            report.extra["replayed_writes"] = len(replay) - failed
            report.extra["replay_failed"] = failed
            names = tuple(t.name for t in backend.tools())
        except BaseException:
            backend.close()
            raise
        items += as_items
        clash = sorted(set(names) & set(STANDARD_TOOLS))
        if clash:
            backend.close()
            raise DeliveryError(f"memory system {backend.name!r} offers tools named like the standard ones: {', '.join(clash)}")
        info = {"corpus_items": len(items), "default_k": self.default_k, "memory_load": report.to_dict(),
                **_carried_info(carried, True)}
        return Prepared(ws, [], (*STANDARD_TOOLS, *names), backend, info)


@dataclass
class Inject:
    """Squashed + the memory corpus pushed into the prompt (whole if it fits the budget)."""

    name: str = "inject"
    token_budget: int = 8000
    top_k: int = 10

    def prepare(self, task: Task, work_dir: Path, carried: CarriedMemory | None = None) -> Prepared:
        """A squashed workspace and the rendered corpus (plus carried entries) as a prompt addition."""
        ws, items = _squashed(task, work_dir, keep_corpus=True)
        items += carried.items() if carried is not None else []
        inj = render_inject(items, task.statement, self.token_budget, self.top_k)
        additions = [inj.text] if inj.text else []
        info = {"corpus_items": len(items), "inject_tokens": inj.tokens, "inject_mode": inj.mode, "inject_items": len(inj.items),
                **_carried_info(carried, True)}
        return Prepared(ws, additions, STANDARD_TOOLS, None, info, injected=inj.items)


@dataclass
class Oracle:
    """Squashed + the fact itself (upper bound)."""

    name: str = "oracle"

    def prepare(self, task: Task, work_dir: Path, carried: CarriedMemory | None = None) -> Prepared:
        """A squashed workspace and the fact sentence as a prompt addition (carried memory is left out)."""
        ws, _ = _squashed(task, work_dir, keep_corpus=False)
        return Prepared(ws, [oracle_addition(task.fact)], STANDARD_TOOLS, info=_carried_info(carried, False))


def oracle_addition(fact: str) -> str:
    """What the oracle delivery adds to the prompt: the fact sentence."""
    return f"A fact about this project that matters here: {fact}"
