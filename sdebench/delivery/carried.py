"""Memory carried along a stream of tasks: what earlier episodes earned, as explicit data.

Three kinds of entries:

- F (retained corrections): the distinct feedback texts an agent was given on an earlier task.
- X (past solves): for each earlier task the agent resolved, its statement and accepted diff.
- W (written memory): what the agent itself wrote with the memory system's write tools on an
  earlier task (memtool with `memory.write=true`: the knowledge graph's entities and observations,
  basic-memory's notes, mem0's memories), one entry per write call, its tool and arguments kept.
  Memtool replays each call into the next task's system after loading the corpus, so task N+1 reads
  what task N wrote as the system's own objects (`stream.carry=written`, or `all`); a system without
  that tool (another system, or no write tools) loads the call's text as an experience item instead
  (source X, ids `X:written#n`), as do full and inject.

A `CarriedMemory` is immutable; `after_episode` returns the next one. Delivery modes apply it
exactly as they apply a task's own memory (see sdebench.delivery.modes): full appends the entries to
the workspace's `.agent/preferences.md` / `.agent/past_fixes.md`; memtool and inject add them to
the corpus; squashed and oracle leave them out.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdebench.delivery.memory import MemoryItem, estimate_tokens
from sdebench.errors import DeliveryError
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

# Which entry kinds a stream carries forward.
CARRY = {"F": ("F",), "X": ("X",), "both": ("F", "X"), "written": ("W",), "all": ("F", "X", "W"), "none": ()}
CARRIED_COMMIT = "Carried agent memory from earlier tasks"


class CarryError(DeliveryError, ValueError):
    """An unknown carry setting."""


@dataclass(frozen=True)
class Entry:
    """One carried entry: its kind (F or X), the task it came from, a title and the text."""

    kind: str
    origin: str
    title: str
    text: str
    call: str = ""  # W: the write call as JSON, {"tool": ..., "arguments": ...} (replayed into the next system)


@dataclass(frozen=True)
class CarriedMemory:
    """The ordered entries earlier episodes left for later ones."""

    entries: tuple[Entry, ...] = ()

    def items(self) -> list[MemoryItem]:
        """The entries as memory items (ids `F:carried#n` / `X:carried#n` / `X:written#n`, numbered per kind)."""
        counts = {"F": 0, "X": 0, "W": 0}
        out = []
        for e in self.entries:
            counts[e.kind] += 1
            if e.kind == "W":  # the agent's own notes: experience
                out.append(MemoryItem(f"X:written#{counts['W']}", "X", e.title, e.text))
            else:
                out.append(MemoryItem(f"{e.kind}:carried#{counts[e.kind]}", e.kind, e.title, e.text))
        return out

    def count(self, kind: str | None = None) -> int:
        """How many entries (of `kind`, if given)."""
        return sum(1 for e in self.entries if kind is None or e.kind == kind)

    def tokens(self) -> int:
        """Estimated tokens of all rendered entries (memory.estimate_tokens)."""
        return sum(estimate_tokens(i.render()) for i in self.items())

    def digest(self) -> str:
        """A short hash of the entries (keys an episode that received this memory)."""
        raw = json.dumps([[e.kind, e.origin, e.title, e.text, *([e.call] if e.call else [])] for e in self.entries])
        return hashlib.sha256(raw.encode()).hexdigest()[:12]

    def extended(self, new: list[Entry]) -> CarriedMemory:
        """A copy with `new` appended."""
        return CarriedMemory((*self.entries, *new))


def kinds_for(carry: str) -> tuple[str, ...]:
    """The entry kinds carried by the setting `carry` (F, X, both, none)."""
    if carry not in CARRY:
        raise CarryError(f"unknown carry {carry!r} (choose {', '.join(CARRY)})")
    return CARRY[carry]


def correction_entries(task_id: str, feedback: list[str]) -> list[Entry]:
    """One F entry per distinct feedback text the agent was given on `task_id`."""
    out, seen = [], set()
    for text in feedback:
        body = text.strip()
        if not body or body in seen:
            continue
        seen.add(body)
        title = f"correction on {task_id} ({len(seen)})"
        out.append(Entry("F", task_id, title, f"Feedback given on an earlier task ({task_id}):\n{body}"))
    return out


def solve_entry(task_id: str, statement: str, diff: str) -> Entry:
    """The X entry summarising an accepted solve: the statement and the diff."""
    text = f"Past solve of {task_id}.\nStatement: {statement.strip()}\nAccepted diff:\n{diff.rstrip()}"
    return Entry("X", task_id, f"past solve: {task_id}", text)


def written_entries(task_id: str, written: list[dict[str, Any]] | None) -> list[Entry]:
    """One W entry per write call the agent made to the memory system on `task_id` (its tool and text)."""
    return [Entry("W", task_id, f"written on {task_id} ({n}) with {w.get('tool', '?')}", str(w.get("text", "")),
                  json.dumps({"tool": w.get("tool"), "arguments": w.get("arguments", {})}, sort_keys=True))
            for n, w in enumerate(written or [], 1) if str(w.get("text", "")).strip()]


def replay_calls(memory: CarriedMemory) -> list[tuple[str, dict[str, Any]]]:
    """The write calls of the W entries, in order: (tool, arguments)."""
    out = []
    for e in memory.entries:
        if e.kind == "W" and e.call:
            call = json.loads(e.call)
            out.append((str(call.get("tool")), dict(call.get("arguments") or {})))
    return out


def after_episode(memory: CarriedMemory, task_id: str, statement: str, record: Any, carry: str) -> CarriedMemory:
    """The memory the next task receives after an episode of `task_id` with `record` (an EpisodeRecord)."""
    kinds = kinds_for(carry)
    new: list[Entry] = []
    if "W" in kinds:
        new += written_entries(task_id, record.delivery.memory_written)
    if "F" in kinds:
        new += correction_entries(task_id, list(record.outcome.feedback))
    if "X" in kinds and record.outcome.resolved and record.outcome.final_diff.strip():
        new.append(solve_entry(task_id, statement, record.outcome.final_diff))
    return memory.extended(new)


def _section(entries: list[Entry], kind: str) -> str:
    head = "# Corrections carried from earlier tasks" if kind == "F" else "# Solves carried from earlier tasks"
    blocks = []
    for e in entries:
        if kind == "F":
            blocks.append("- " + e.text.replace("\n", "\n  "))
        else:
            blocks.append(f"## {e.title}\n{e.text}")
    return head + "\n\n" + "\n\n".join(blocks) + "\n"


def write_into(workspace: Path, memory: CarriedMemory) -> list[str]:
    """Append the entries to the workspace's `.agent/` files and commit them; return the paths written.

    Committed so the agent's diff, the grader's `unchanged` guard and the final diff see only
    the agent's own edits.
    """
    written = []
    for kind, rel in (("F", PREFERENCES), ("X", PAST_FIXES)):
        entries = [e for e in memory.entries if e.kind == kind]
        if not entries:
            continue
        path = Path(workspace) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text() if path.is_file() else ""
        lead = old.rstrip("\n") + "\n\n" if old.strip() else ""
        path.write_text(lead + _section(entries, kind))
        written.append(rel)
    if written:
        repo_mod.commit_paths(workspace, written, CARRIED_COMMIT)
    return written
