"""The BugsInPy-v2 verifier as an sdebench grader (registry name `bugsinpy`).

Rules, in order (default-fail: anything unexpected scores 0):
1. no-op guard: `solution.py` missing or byte-identical to the task's HEAD -> 0;
2. compile guard: `solution.py` must compile;
3. import guard: `import solution` must succeed;
4. the hidden test file runs: reward 1 iff at least one test ran and every one passed (a failed,
   errored, skipped, xfailed or missing test is not a pass);
5. fallback: if the test file cannot be collected, and cannot be collected against the original
   solution either (broken independently of the fix), reward 1 iff rules 1-3 held;
pass_ratio = passed / reported, 0 when nothing ran.

The dataset's tests hold their expected values and must run as written, in the same sandbox as
the submitted code; so the run is hardened instead (sdebench.grading.rules and the runner): the
copy is sanitised like every graded copy (test and pytest-config files back to HEAD, hooks and
bytecode dropped), the sandbox is read-only, the runner is isolated and checks its own and
pytest's functions, a honeypot sits in `solution.py`, and the per-test time limit is enforced
from the host. Every test of the file is held out: the feedback says about them only what the
feedback policy allows.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from sdebench.grading import rules
from sdebench.grading.grade import HELD_OUT_FAIL, Grade, TestOutcome, pristine_tree
from sdebench.grading.honeypot import make_honeypot
from sdebench.grading.options import GradeOptions, OptionError
from sdebench.grading.rewards import rewards, shaped
from sdebench.grading.testrun import TestRun, run_tests
from sdebench.interop.bugsinpy import HIDDEN_TEST, SOLUTION
from sdebench.sandbox.base import SandboxError, SandboxFactory
from sdebench.sandbox.files import copy_tree
from sdebench.tasks.record import Task

GROUP = "HIDDEN_TO_PASS"
DEFAULT_TIMEOUT = 120.0


def original_solution(task: Task) -> bytes:
    """The HEAD `solution.py` of the task's repo."""
    return pristine_tree(task).as_dict()[SOLUTION]


def _hidden_test(task: Task) -> str:
    hidden = task.hidden_files()
    if HIDDEN_TEST not in hidden:
        raise FileNotFoundError(f"task {task.id} has no hidden {HIDDEN_TEST}")
    return hidden[HIDDEN_TEST]


def _collect_failed(run: TestRun) -> bool:
    return bool(run.collect_errors) and not run.tests


def _held_out_text(policy: str, tests: list[TestOutcome]) -> str | None:
    failing = [t.id for t in tests if t.outcome != "passed"]
    if not failing:
        return None
    if policy == "binary":
        return HELD_OUT_FAIL
    line = f"Held-out tests: {len(failing)} of {len(tests)} fail."
    return line + "".join(f"\n- {i}" for i in failing) if policy == "tests" else line


def _reward(resolved: bool, tests: list[TestOutcome], guards: dict, opts: GradeOptions) -> dict[str, Any]:
    """Rewards with the dataset's tests as the originally failing ones, counted as the policy reveals."""
    if guards:
        return {**rewards(False, 0.0, None), "verifier": "bugsinpy"}
    passed = sum(t.outcome == "passed" for t in tests)
    if opts.feedback_hidden == "binary" and not resolved:
        passed = 0
    ratio = passed / len(tests) if tests else 0.0
    return {**rewards(resolved, ratio, shaped(True, passed, len(tests), 0, resolved, opts.step_cost)), "verifier": "bugsinpy"}


def _result(task: Task, start: float, resolved: bool, guards: dict[str, str], tests: list[TestOutcome],
            error: str | None, opts: GradeOptions, notes: list[str], note: str = "") -> Grade:
    passed = sum(t.outcome == "passed" for t in tests)
    lines = ["Resolved." if resolved else "Not resolved."]
    lines += [f"- {why}" for why in guards.values()]
    if error:
        lines.append(f"- The grade could not run: {error}")
    if tests and not resolved and (held := _held_out_text(opts.feedback_hidden, tests)):
        lines.append(held)
    if note:
        lines.append(f"- {note}")
    counts = {"FAIL_TO_PASS": {"passed": 0, "total": 0}, "PASS_TO_PASS": {"passed": 0, "total": 0},
              GROUP: {"passed": passed, "total": len(tests)}}
    return Grade(
        task_id=task.id,
        resolved=resolved,
        tests=tests,
        counts=counts,
        pass_ratio=passed / len(tests) if tests else 0.0,
        guards=list(guards),
        duration_s=time.monotonic() - start,
        feedback="\n".join(lines),
        reward=_reward(resolved, tests, guards, opts),
        error=error,
        notes=notes,
        feedback_policy=opts.feedback_hidden,
    )


class BugsInPyGrader:
    """The grader of imported BugsInPy-v2 tasks."""

    def grade(self, task: Task, workspace: Path, factory: SandboxFactory, **options: Any) -> Grade:
        """Grade `workspace` for an imported BugsInPy task by that dataset's verifier rules; never raises."""
        start = time.monotonic()
        try:
            opts = GradeOptions.from_mapping(options)
        except (OptionError, TypeError) as e:
            return _result(task, start, False, {}, [], str(e), GradeOptions(), [])
        tmp = Path(tempfile.mkdtemp(prefix="g-"))
        try:
            return self._grade(task, Path(workspace), factory, tmp, opts, start)
        except Exception as e:  # noqa: BLE001 - the grader never raises; the reason is the grade
            return _result(task, start, False, {}, [], f"{type(e).__name__}: {e}", opts, [])
        finally:
            if not opts.keep_dir:
                shutil.rmtree(tmp, ignore_errors=True)

    def _grade(self, task: Task, workspace: Path, factory: SandboxFactory, tmp: Path, opts: GradeOptions,
               start: float) -> Grade:
        if not workspace.is_dir():
            return _result(task, start, False, {}, [], f"workspace {workspace} is not a directory", opts, [])
        ws = tmp / "1" / "repo"
        try:
            copied = copy_tree(workspace, ws, skip_git=True, max_bytes=opts.max_workspace_mb * 1024 * 1024)
        except SandboxError as e:
            return _result(task, start, False, {"too_large": f"The workspace cannot be graded: {e}."}, [], None, opts, [])
        pristine = pristine_tree(task).as_dict()
        prep = rules.prepare_copy(ws, pristine, task.test_files)
        notes = copied.notes + prep.notes
        sol = ws / SOLUTION
        if not sol.is_file():
            return _result(task, start, False, {"missing": f"{SOLUTION} is missing: nothing to grade."}, [], None,
                           opts, notes)
        if sol.read_bytes() == pristine.get(SOLUTION):
            why = f"{SOLUTION} is unchanged: an unedited solution scores 0."
            return _result(task, start, False, {"unchanged": why}, [], None, opts, notes)
        if msg := rules.compile_error(sol.read_bytes(), SOLUTION):
            return _result(task, start, False, {f"compile:{SOLUTION}": f"{SOLUTION} does not compile: {msg}"}, [],
                           None, opts, notes)
        test_src = _hidden_test(task)
        rules.force_write(ws, HIDDEN_TEST, test_src.encode())
        pot = make_honeypot(ws, [SOLUTION], HIDDEN_TEST)
        if pot is not None:
            pot.install(ws)
        limit = opts.test_limit(task.test_time_limit_s)
        paths = [HIDDEN_TEST] + ([pot.test_rel] if pot else [])
        with factory.open(ws, read_only=True) as box:
            run = run_tests(box, paths, ["solution"], timeout=opts.timeout,
                            shadow_check=prep.added_names, test_time_limit=limit)
        if run.error:
            return _result(task, start, False, {}, [], run.error, opts, notes)
        guards: dict[str, str] = {}
        for name, where in sorted(run.shadowed.items()):
            guards[f"shadow:{name}"] = f"The top-level name {name!r} is also importable from {where}: not tested."
        if "solution" in run.import_errors:
            msg = run.import_errors["solution"].strip().splitlines() or [""]
            guards["import:solution"] = f"solution fails to import: {msg[-1]}"
        if not guards and (run.tampered or (pot is not None and run.finished and pot.tampered(run))):
            guards["tampering"] = ("The test run was tampered with: the grader's control checks gave wrong results, "
                                   "so no outcome of this run is trusted.")
        if guards:
            return _result(task, start, False, guards, [], None, opts, notes)
        own = {k: v for k, v in run.tests.items() if k.split("::", 1)[0] == HIDDEN_TEST}
        tests = [TestOutcome(k, GROUP, v.outcome) for k, v in sorted(own.items())]
        if any(c["nodeid"] == HIDDEN_TEST for c in run.collect_errors) and not own:
            if _collects_with_original(task, test_src, factory, tmp, opts):
                note = "The hidden test file cannot be collected against this solution (it can against the original)."
                return _result(task, start, False, {}, [], None, opts, notes, note)
            note = "The hidden test file cannot be collected at all: the basic check (changed, compiles, imports) decides."
            return _result(task, start, True, {}, [], None, opts, notes, note)
        resolved = bool(tests) and all(t.outcome == "passed" for t in tests) and run.problem is None
        note = f"The test run did not finish: {run.fault}" if run.fault else ""
        return _result(task, start, resolved, {}, tests, None, opts, notes, note)


def grade_bugsinpy(task: Task, workspace: Path, factory: SandboxFactory, **options: Any) -> Grade:
    """Grade by the BugsInPy rules (the registry's `bugsinpy` grader)."""
    return BugsInPyGrader().grade(task, workspace, factory, **options)


def _collects_with_original(task: Task, test_src: str, factory: SandboxFactory, tmp: Path, opts: GradeOptions) -> bool:
    """Whether the hidden test file collects against the original solution."""
    base = tmp / "original" / "repo"
    (base / "tests").mkdir(parents=True)
    (base / SOLUTION).write_bytes(original_solution(task))
    (base / HIDDEN_TEST).write_text(test_src)
    with factory.open(base, read_only=True) as box:
        run = run_tests(box, [HIDDEN_TEST], [], timeout=opts.timeout)
    return not _collect_failed(run) and run.error is None
