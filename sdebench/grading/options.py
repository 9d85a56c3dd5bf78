"""Grading options: every knob of a grade, with its default (the `grading` config group).

One dataclass for every grader; `conf/grading/default.yaml` holds the same keys. The episode loop,
the environment and the adapters pass them as keyword options to `grade()`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from sdebench.errors import ConfigError

DEFAULT_FEEDBACK = "binary"  # the feedback policy when none is configured (and of records before the field)
POLICIES = (DEFAULT_FEEDBACK, "counts", "tests")
# The per-test limit of the visible phase when none is configured: fixed, never the task's figure,
# which is measured on the oracle fix (what phase 1 enforces and says must not depend on it).
VISIBLE_TEST_LIMIT_S = 10.0


class OptionError(ConfigError):
    """An unknown grading option or a bad value."""


@dataclass(frozen=True)
class GradeOptions:
    """What a grade may use and reveal."""

    feedback_hidden: str = DEFAULT_FEEDBACK  # what the feedback says about held-out tests: binary | counts | tests
    timeout: float = 300.0  # s: the whole test run of one phase
    test_time_limit_s: float | None = None  # per test; None: VISIBLE_TEST_LIMIT_S in phase 1, the task's in phase 2
    test_time_floor_s: float = 5.0  # the per-test limit is never below this
    per_test_chars: int = 1500  # feedback: failure text kept per visible test
    feedback_chars: int = 6000  # feedback: total size
    step_cost: float = 0.1  # shaped reward: cost of one submission
    max_workspace_mb: int = 512  # a bigger workspace is not graded
    keep_dir: bool = False  # leave the graded copies on disk (debugging)

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> GradeOptions:
        """Options from keyword values; unknown names or a bad policy raise OptionError."""
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise OptionError(f"unknown grade option(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        opts = cls(**values)
        if opts.feedback_hidden not in POLICIES:
            raise OptionError(f"grading.feedback_hidden must be one of {', '.join(POLICIES)}, got {opts.feedback_hidden!r}")
        for name in ("timeout", "test_time_floor_s"):
            if not isinstance(getattr(opts, name), int | float) or getattr(opts, name) <= 0:
                raise OptionError(f"grading.{name} must be a positive number, got {getattr(opts, name)!r}")
        return opts

    @classmethod
    def given(cls, options: GradeOptions | None, values: dict[str, Any]) -> GradeOptions:
        """What a grader was handed: the options object as it is, else options from keyword values
        (OptionError for both at once, or for a bad value)."""
        if options is None:
            return cls.from_mapping(values)
        if values or not isinstance(options, GradeOptions):
            raise OptionError("give a grader either options=GradeOptions(...) or keyword options, not both")
        return options

    def test_limit(self, task_limit: float | None) -> float:
        """The per-test time limit of held-out tests: configured, else the task's, never below the floor."""
        chosen = self.test_time_limit_s if self.test_time_limit_s is not None else task_limit
        return max(float(chosen or 0.0), float(self.test_time_floor_s))

    def visible_limit(self) -> float:
        """The per-test time limit of the visible phase: configured, else a fixed figure, never below the
        floor; never the task's, which is measured on the oracle fix."""
        chosen = self.test_time_limit_s if self.test_time_limit_s is not None else VISIBLE_TEST_LIMIT_S
        return max(float(chosen), float(self.test_time_floor_s))
