"""The graders a task may name in its `grader` field, and the `package.module:Name` form of any component.

Part of the task vocabulary, so the task record checks the field without the component registry
(`sdebench.components`, which builds the grader a name selects, imports these).
"""

from __future__ import annotations

import re
from typing import Any

DEFAULT_GRADER = "sdebench"
GRADERS: dict[str, str] = {
    DEFAULT_GRADER: "sdebench.grading.grade:grade_two_phase",
    "bugsinpy": "sdebench.interop.bugsinpy_verifier:grade_bugsinpy",
}
_TARGET = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_target(value: Any) -> bool:
    """Whether `value` has the form `package.module:Name` (the name may be dotted: `mod:Outer.Inner`)."""
    return isinstance(value, str) and bool(_TARGET.match(value))
