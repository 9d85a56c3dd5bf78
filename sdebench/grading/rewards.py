"""Rewards of a grade: binary (resolved), pass_ratio, and the PatchBench-style shaped reward.

Shaped, per submission:
    raw = +0.3 if the source is valid Python
          +0.4 x newly_passing / originally_failing
          -0.5 x regressions
          -0.1 step cost
          +0.3 if every graded test passes
    shaped = clamp((raw + 0.6) / 1.6, 0, 1)
"Originally failing" are the FAIL_TO_PASS and HIDDEN_TO_PASS tests (red at HEAD by construction),
"regressions" the PASS_TO_PASS tests (green at HEAD) that no longer pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SYNTAX_BONUS = 0.3
PROGRESS_WEIGHT = 0.4
REGRESSION_PENALTY = 0.5
STEP_COST = 0.1
TERMINAL_BONUS = 0.3
OFFSET = 0.6
SCALE = 1.6


@dataclass(frozen=True)
class ShapedBreakdown:
    """Every component of the shaped reward, as added into `raw_sum`."""

    syntax_valid_bonus: float
    progress_reward: float
    regression_penalty: float
    step_cost: float
    terminal_bonus: float
    raw_sum: float
    normalized: float


def shaped(
    valid_python: bool,
    newly_passing: int,
    originally_failing: int,
    regressions: int,
    all_pass: bool,
    step_cost: float = STEP_COST,
) -> ShapedBreakdown:
    """The shaped reward and its breakdown."""
    syntax = SYNTAX_BONUS if valid_python else 0.0
    progress = PROGRESS_WEIGHT * newly_passing / originally_failing if originally_failing else 0.0
    penalty = -REGRESSION_PENALTY * regressions if regressions else 0.0
    step = -step_cost
    terminal = TERMINAL_BONUS if all_pass else 0.0
    raw = syntax + progress + penalty + step + terminal
    norm = min(1.0, max(0.0, (raw + OFFSET) / SCALE))
    r = lambda x: round(x, 6)  # noqa: E731 - keep float noise out of stored records
    return ShapedBreakdown(r(syntax), r(progress), r(penalty), r(step), r(terminal), r(raw), r(norm))


def rewards(resolved: bool, pass_ratio: float, breakdown: ShapedBreakdown | None) -> dict:
    """The reward dict of a grade; a grade whose guard fired passes `breakdown=None` and scores 0."""
    return {
        "binary": 1.0 if resolved else 0.0,
        "pass_ratio": round(pass_ratio, 6),
        "shaped": breakdown.normalized if breakdown else 0.0,
        "shaped_breakdown": asdict(breakdown) if breakdown else None,
    }
