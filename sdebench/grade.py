"""Pristine-copy, default-fail grading (see DESIGN.md, 'Grading semantics').

Interface fixed here; the implementation lands with the sandbox backends.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sdebench.sandbox.base import SandboxFactory
from sdebench.task import Task

GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS", "HIDDEN_TO_PASS")


@dataclass(frozen=True)
class TestOutcome:
    """One graded test."""

    id: str
    group: str
    outcome: str  # passed | failed | error | skipped | xfailed | xpassed | missing
    message: str = ""


@dataclass
class Grade:
    """The verdict on one submitted workspace."""

    task_id: str
    resolved: bool
    tests: list[TestOutcome] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> {"passed": n, "total": m}
    pass_ratio: float = 0.0
    guards: list[str] = field(default_factory=list)  # guards hit, e.g. "unchanged", "compile:pkg/a.py"
    duration_s: float = 0.0
    feedback: str = ""
    reward: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def grade(task: Task, workspace: Path, sandbox: SandboxFactory, **options: Any) -> Grade:
    """Grade the host dir `workspace` for `task` in a fresh sandbox from `sandbox`; never raises."""
    raise NotImplementedError("grading lands with the sandbox backends")
