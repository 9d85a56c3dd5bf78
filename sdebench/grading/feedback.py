"""What an agent is shown of a grade, built so that nothing secret shapes it.

The feedback text has two parts. The first comes from phase 1 alone (guards, the visible run's
fault, the failing visible tests with their output, the grader's notes on the workspace) and is
fixed before any workspace code runs in phase 2; phase 1 holds neither the fact, the oracle nor
the hidden tests, so it needs no redaction. The second is the verdict: whether the grade resolved
and the one statement about phase 2 that the feedback policy allows, a function of the held-out
view (`held_out_view`) only. The rewards an agent sees follow the same view.

No transform keyed on the fact, the oracle or the hidden tests is applied to anything shown: a
redaction of fact tokens would answer "is this string a fact token?". The one transform applied
is fixed (`records.clean_text`: valid UTF-8, no control characters), the same for every task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sdebench.grading.records import clean_text
from sdebench.grading.rewards import rewards, shaped

if TYPE_CHECKING:
    from sdebench.grading.grade import TestOutcome
    from sdebench.grading.options import GradeOptions

GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS", "HIDDEN_TO_PASS")
HELD_OUT_FAIL = "Held-out tests fail."
RESOLVED = "Resolved: every graded test passes."
MAX_NOTES = 20
# Guards that stop the visible tests from running: no test outcome is reported after them.
_BEFORE_TESTS = ("unchanged", "too_large", "compile:", "shadow:")


def held_out_view(policy: str, failing: Sequence[str], rechecks: Sequence[str], total: int,
                  finished: bool = True) -> dict[str, Any]:
    """What the policy lets an agent learn of phase 2: `binary` one bit, `counts` how many fail,
    `tests` which (`failing`: held-out ids not passed, `rechecks`: visible ids whose re-check
    failed; a phase 2 that did not `finish` cleanly passes nothing)."""
    view: dict[str, Any] = {"pass": finished and not failing and not rechecks}
    if policy in ("counts", "tests"):
        view.update(failed=len(failing), total=total, rechecks_failed=len(rechecks))
    if policy == "tests":
        view.update(failing=list(failing), rechecks=list(rechecks))
    return view


def held_out_line(policy: str, view: dict[str, Any] | None) -> str | None:
    """The one statement the feedback makes about phase 2 (None: nothing to say)."""
    if view is None or view["pass"]:
        return None
    if policy == "binary":
        return HELD_OUT_FAIL
    line = f"Held-out tests: {view['failed']} of {view['total']} fail."
    if view["rechecks_failed"]:
        line += f" {view['rechecks_failed']} visible tests failed their held-out re-check."
    if policy == "tests":
        line += "".join(f"\n- {i}" for i in [*view["failing"], *view["rechecks"]])
    return line


@dataclass(frozen=True)
class VisibleFeedback:
    """The part of the feedback fixed from phase 1 alone."""

    lines: tuple[str, ...]  # guards, the visible run's fault, failing visible tests with their output
    notes: tuple[str, ...]  # the grader's notes on the workspace
    tested: bool  # the visible tests ran (a held-out statement may follow)


def visible_feedback(phase1: Iterable[TestOutcome] | None, guards: dict[str, str], fault: str | None,
                     notes: Sequence[str], opts: GradeOptions) -> VisibleFeedback:
    """The phase-1 part of the feedback: guards, the fault, failing visible tests with their output, notes."""
    lines = [f"- {reason}" for reason in guards.values()]
    if fault:
        lines.append(f"- The visible test run did not finish: {fault}")
    tested = phase1 is not None and not any(g.startswith(_BEFORE_TESTS) for g in guards)
    if tested:
        shown = list(phase1)
        failing = [t for t in shown if t.outcome != "passed"]
        if failing:
            lines.append(f"\nFailing visible tests ({len(failing)} of {len(shown)}):")
            for t in failing:
                lines.append(f"- {t.id}: {t.outcome}")
                if t.message:
                    lines.append("    " + _clip(t.message, opts.per_test_chars).replace("\n", "\n    "))
    note_lines = [f"- {n}" for n in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        note_lines.append(f"- ... and {len(notes) - MAX_NOTES} more")
    return VisibleFeedback(tuple(lines), tuple(note_lines), tested)


def compose(vf: VisibleFeedback, resolved: bool, held_line: str | None, opts: GradeOptions) -> str:
    """The feedback text: the verdict, the phase-1 part, the policy's held-out line, the notes."""
    if resolved:
        return RESOLVED
    out = ["Not resolved.", *vf.lines]
    if held_line and vf.tested:
        out.append("\n" + held_line)
    if vf.notes:
        out.append("\nGrader notes (your workspace was normalised before testing):")
        out += vf.notes
    text = clean_text("\n".join(out), 1 << 30)
    return text if len(text) <= opts.feedback_chars else text[: opts.feedback_chars - 20] + "\n[... truncated ...]"


def shown_counts(visible: Iterable[TestOutcome], view: dict[str, Any] | None, hidden_total: int) -> dict:
    """Counts per group as an agent may know them: visible tests as phase 1 reported them, held-out
    tests only as the view says (`binary`: all or none)."""
    counts = {g: {"passed": 0, "total": 0} for g in GROUPS}
    for t in visible:
        counts[t.group]["total"] += 1
        counts[t.group]["passed"] += t.outcome == "passed"
    hidden = counts["HIDDEN_TO_PASS"]
    hidden["total"] = hidden_total
    if view is not None:
        hidden["passed"] = hidden_total - view["failed"] if "failed" in view else hidden_total * bool(view["pass"])
    return counts


def reward_of(counts: dict, resolved: bool, guarded: bool, step_cost: float) -> dict[str, Any]:
    """The rewards of shown `counts` (shown_counts); a guard scores 0 on every reward."""
    if guarded:
        return rewards(False, 0.0, None)
    total = sum(c["total"] for c in counts.values())
    passed = sum(c["passed"] for c in counts.values())
    orig_failing = counts["FAIL_TO_PASS"]["total"] + counts["HIDDEN_TO_PASS"]["total"]
    newly = counts["FAIL_TO_PASS"]["passed"] + counts["HIDDEN_TO_PASS"]["passed"]
    regressions = counts["PASS_TO_PASS"]["total"] - counts["PASS_TO_PASS"]["passed"]
    return rewards(resolved, passed / total if total else 0.0,
                   shaped(True, newly, orig_failing, regressions, resolved, step_cost))


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else "[...]\n" + text[-n:]
