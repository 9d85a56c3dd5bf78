"""The generator-facing API: what a task family builds for one variant x placement.

A family module in `generators/` defines `GENERATOR`, an object with the attributes of
`Generator` (normally a declarative `sdebench.generation.family.Family`). `build(variant, source)` returns a `TaskSpec`: the whole history of a synthetic
repo (HEAD = the buggy state), the fixes as replacement files, the hidden tests and the
metadata. The engine (`sdebench.generation.generate`) turns a spec into a task dir and validates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from sdebench.generation.seeded import entry_order
from sdebench.tasks.commits import Commit  # re-exported: families import it from here


@dataclass(frozen=True)
class TaskSpec:
    """Everything one emitted task needs; produced by a family generator."""

    family: str
    variant: int
    source: str
    bottleneck: str
    statement: str
    fact: str
    fact_tokens: tuple[str, ...]
    conventional_guess: str
    commits: tuple[Commit, ...]
    oracle_files: dict[str, str]
    conventional_files: dict[str, str]
    hidden_tests: dict[str, str]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    hidden_to_pass: tuple[str, ...]
    tags: tuple[str, ...] = ()
    description: str = ""
    names: tuple[str, ...] = ()  # the project's own names (package, project), which a fresh set renames
    set_digest: str | None = None  # the digest of the fresh set's seed (None: the published set)
    competency: str = "recall"  # how the fact must be worked out of memory (sdebench.tasks.artifacts.COMPETENCIES)

    @property
    def task_id(self) -> str:
        """The task's id: family, variant and source."""
        return task_id(self.family, self.variant, self.source)


def task_id(family: str, variant: int, source: str) -> str:
    """The canonical id of a family x variant x source task."""
    return f"{family}-v{variant}-{source}"


@runtime_checkable
class Generator(Protocol):
    """A task family: one codebase, one bug, one fact space."""

    family: str
    bottleneck: str
    variants: Sequence[int]
    description: str

    def build(self, variant: int, source: str) -> TaskSpec:
        """Build the spec of one variant with the fact placed in `source`."""
        ...


@dataclass
class Memory:
    """Helper for generators: artifact files assembled from entries, one of which may carry the fact.

    Every placement gets the same artifact paths with the same distractor entries; the fact entry
    is added only to the file of the designated source, so a file's presence reveals nothing.
    """

    files: dict[str, list[str]] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def add(self, path: str, entry: str) -> None:
        """Append an entry (a paragraph or list item) to an artifact file."""
        self.files.setdefault(path, []).append(entry.strip("\n"))

    def header(self, path: str, text: str) -> None:
        """Set the text that opens an artifact file."""
        self.headers[path] = text.strip("\n")

    def render(self) -> dict[str, str]:
        """The artifact files as path -> content."""
        out = {}
        for path in sorted(set(self.files) | set(self.headers)):
            parts = [self.headers[path]] if path in self.headers else []
            parts += entry_order(path, self.files.get(path, []))
            out[path] = "\n\n".join(parts) + "\n"
        return out


def visible_files(spec: TaskSpec, head: dict[str, str]) -> dict[str, str]:
    """The test files holding the visible tests (FAIL_TO_PASS and PASS_TO_PASS)."""
    paths = {i.split("::", 1)[0] for i in spec.fail_to_pass + spec.pass_to_pass}
    return {p: head[p] for p in sorted(paths) if p in head}
