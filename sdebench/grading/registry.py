"""Graders by name: a task's `grader` field picks one (`name -> "module:Class"`).

Every grader class has `grade(task, workspace, factory, **options) -> Grade` and never raises.
"""

from __future__ import annotations

import importlib
from functools import cache

GRADERS = {
    "sdebench": "sdebench.grading.grade:TwoPhaseGrader",
    "bugsinpy": "sdebench.interop.bugsinpy_verifier:BugsInPyGrader",
}


class UnknownGrader(ValueError):
    """A grader name that is not registered."""


@cache
def grader_for(name: str):
    """The grader registered as `name` (one instance per process)."""
    target = GRADERS.get(name)
    if target is None:
        raise UnknownGrader(f"unknown grader {name!r} (choose {', '.join(GRADERS)})")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)()
