"""The BugsInPy-v2 verifier as an sdebench grader (registry name `bugsinpy`), on observations.

The dataset's tests hold their expected values; run as written, beside the submission, they can
be answered from inside (reading the caller's frame, objects equal to everything, a test module
pre-seeded in `sys.modules`). So they never run as written: the importer (bugsinpy.py) rewrote
the test file into an observation test and kept its assertions on the host (expected.json of
the task dir). Rules, in order (default-fail: anything unexpected scores 0):

1. no-op guard: `solution.py` missing or byte-identical to the task's HEAD -> 0;
2. compile guard: `solution.py` must compile (checked on the host);
3. guard run (a sandbox holding no test file at all): `import solution` must succeed, the
   top-level names the submission adds must not shadow installed modules, and the runner's own
   functions must be intact; only this run's text (an import error) may be fed back;
4. held-out run (a fresh sandbox with the observation test and a honeypot test pair): each test
   observes the values its assertions depend on; each assertion is judged here, after the
   sandbox exited, on plain data (and, where the dataset had a fixed solution, against its
   recorded values). Reward 1 iff every graded test passed (a failed, errored, skipped or missing
   test, a check that does not hold or was not observed, a run that did not finish, was tampered
   with or contradicts its honeypot is not a pass);
5. fallback: a test file that does not parse (the importer records it) -- or one that cannot be
   collected against the submission nor against the original solution while the original
   imports -- is broken independently of the fix: reward 1 iff rules 1-3 held.
pass_ratio = passed / graded tests. What the feedback says about the held-out tests is what the
feedback policy allows and nothing more: no text of the held-out run reaches it.

A task imported before assertions were kept on the host has no such table: grading it is an
error naming the re-import command, never a silent grade by the old rules.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from sdebench.errors import InteropError
from sdebench.grading import rules
from sdebench.grading.grade import HELD_OUT_FAIL, Grade, TestOutcome, pristine_tree
from sdebench.grading.honeypot import make_honeypot
from sdebench.grading.options import GradeOptions, OptionError
from sdebench.grading.rewards import rewards, shaped
from sdebench.grading.testrun import TestRun, run_tests
from sdebench.interop.bugsinpy import HIDDEN_TEST, REIMPORT, SOLUTION
from sdebench.interop.bugsinpy_checks import FORMAT, judge, row_of
from sdebench.sandbox.base import SandboxError, SandboxFactory
from sdebench.sandbox.files import copy_tree
from sdebench.tasks.record import EXPECTED, Task

GROUP = "HIDDEN_TO_PASS"


class OldTask(InteropError, ValueError):
    """An imported task without a host table (imported by an older importer)."""


def original_solution(task: Task) -> bytes:
    """The HEAD `solution.py` of the task's repo."""
    return pristine_tree(task).as_dict()[SOLUTION]


def host_table(task: Task) -> dict:
    """The task's host table (expected.json); OldTask names the re-import command when it has none."""
    path = task.path / EXPECTED if task.path else None
    try:
        table = json.loads(path.read_text()) if path and path.is_file() else None
    except (OSError, ValueError):
        table = None
    if not isinstance(table, dict) or table.get("format") != FORMAT:
        raise OldTask(f"task {task.id} was imported before its assertions were judged on the host: "
                      f"re-import it ({REIMPORT})")
    return table


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
    return {**rewards(resolved, ratio, shaped(True, passed, len(tests), 0, resolved, opts.step_cost)),
            "verifier": "bugsinpy"}


def _result(task: Task, start: float, resolved: bool, guards: dict[str, str], tests: list[TestOutcome],
            error: str | None, opts: GradeOptions, notes: list[str], note: str = "", held: dict | None = None) -> Grade:
    """The grade; its feedback holds guards, the guard run's text, the policy's line and the copy's notes."""
    passed = sum(t.outcome == "passed" for t in tests)
    lines = ["Resolved." if resolved else "Not resolved."]
    lines += [f"- {why}" for why in guards.values()]
    if error:
        lines.append(f"- The grade could not run: {error}")
    if tests and not resolved and not guards and (line := _held_out_text(opts.feedback_hidden, tests)):
        lines.append(line)
    if note:
        lines.append(f"- {note}")
    if notes:
        lines.append("Grader notes (your workspace was normalised before testing):")
        lines += [f"- {n}" for n in notes[:20]]
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
        held_out=held or {},
    )


class BugsInPyGrader:
    """The grader of imported BugsInPy-v2 tasks."""

    def grade(self, task: Task, workspace: Path, factory: SandboxFactory, options: GradeOptions | None = None,
              **values: Any) -> Grade:
        """Grade `workspace` for an imported BugsInPy task (see the module docstring); never raises."""
        start = time.monotonic()
        try:
            opts = GradeOptions.given(options, values)
        except (OptionError, TypeError) as e:
            return _result(task, start, False, {}, [], str(e), GradeOptions(), [])
        tmp = Path(tempfile.mkdtemp(prefix="g-"))
        try:
            return self._grade(task, Path(workspace), factory, tmp, opts, start)
        except OldTask as e:
            return _result(task, start, False, {}, [], str(e), opts, [])
        except Exception as e:  # noqa: BLE001 - the grader never raises; the reason is the grade
            return _result(task, start, False, {}, [], f"{type(e).__name__}: {e}", opts, [])
        finally:
            if not opts.keep_dir:
                shutil.rmtree(tmp, ignore_errors=True)

    def _grade(self, task: Task, workspace: Path, factory: SandboxFactory, tmp: Path, opts: GradeOptions,
               start: float) -> Grade:
        table = host_table(task)
        if not workspace.is_dir():
            return _result(task, start, False, {}, [], f"workspace {workspace} is not a directory", opts, [])
        ws = tmp / "base" / "repo"
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
        # Both copies are made before any submitted code runs.
        ws_guard, ws_held = tmp / "guard" / "repo", tmp / "held" / "repo"
        shutil.copytree(ws, ws_guard)
        shutil.copytree(ws, ws_held)
        guards, error = self._guard_run(ws_guard, factory, prep.added_names, opts)
        if error:
            return _result(task, start, False, {}, [], error, opts, notes)
        if guards:
            return _result(task, start, False, guards, [], None, opts, notes)
        if "fallback" in table:
            note = "The basic check decides this task (changed, compiles, imports)."
            return _result(task, start, True, {}, [], None, opts, notes, note)
        rules.force_write(ws_held, HIDDEN_TEST, task.hidden_files()[HIDDEN_TEST].encode())
        pot = make_honeypot(ws_held, [SOLUTION], HIDDEN_TEST)
        if pot is not None:
            pot.install(ws_held)
        limit = opts.test_limit(task.test_time_limit_s)
        with factory.open(ws_held, read_only=True) as box:
            run = run_tests(box, [HIDDEN_TEST] + ([pot.test_rel] if pot else []), ["solution"], timeout=opts.timeout,
                            mode="observe", shadow_check=prep.added_names, test_time_limit=limit)
        if run.error:
            return _result(task, start, False, {}, [], f"held-out run: {run.error}", opts, notes)
        forged = pot is not None and run.finished and not run.import_errors and pot.tampered(run)
        held = {"fault": run.fault, "tampered": bool(run.tampered) or forged, "import_errors": sorted(run.import_errors),
                "shadowed": sorted(run.shadowed), "timed_out": len(run.timed_out_tests)}
        collect_failed = any(c["nodeid"] == HIDDEN_TEST for c in run.collect_errors) and not run.tests
        if collect_failed and self._broken_without_the_fix(task, factory, tmp, opts):
            note = "The basic check decides this task (changed, compiles, imports)."
            return _result(task, start, True, {}, [], None, opts, notes, note, held)
        tests = judged(table, run)
        clean = run.problem is None and not held["tampered"] and not run.import_errors and not run.shadowed
        resolved = clean and bool(tests) and all(t.outcome == "passed" for t in tests)
        return _result(task, start, resolved, {}, tests, None, opts, notes, held=held)

    def _guard_run(self, ws: Path, factory: SandboxFactory, added: list[str],
                   opts: GradeOptions) -> tuple[dict[str, str], str | None]:
        """Import the submission with no test file present (what it reads, it may show): guards, or an error."""
        with factory.open(ws, read_only=True) as box:
            run = run_tests(box, [], ["solution"], timeout=opts.timeout, shadow_check=added,
                            test_time_limit=opts.test_limit(None))
        if run.error:
            return {}, f"guard run: {run.error}"
        guards: dict[str, str] = {}
        for name, where in sorted(run.shadowed.items()):
            guards[f"shadow:{name}"] = f"The top-level name {name!r} is also importable from {where}: not tested."
        if "solution" in run.import_errors:
            msg = run.import_errors["solution"].strip().splitlines() or [""]
            guards["import:solution"] = f"solution fails to import: {msg[-1]}"
        elif run.fault:
            guards["guard_run"] = f"The import check did not finish: {run.fault}"
        if not guards and run.tampered:
            guards["tampering"] = ("The test run was tampered with: the grader's control checks gave wrong results, "
                                   "so no outcome of this run is trusted.")
        return guards, None

    def _broken_without_the_fix(self, task: Task, factory: SandboxFactory, tmp: Path, opts: GradeOptions) -> bool:
        """Whether the held-out file fails to collect against the original solution while it imports."""
        base = tmp / "original" / "repo"
        (base / "tests").mkdir(parents=True)
        (base / SOLUTION).write_bytes(original_solution(task))
        (base / HIDDEN_TEST).write_text(task.hidden_files()[HIDDEN_TEST])
        with factory.open(base, read_only=True) as box:
            run = run_tests(box, [HIDDEN_TEST], ["solution"], timeout=opts.timeout, mode="observe")
        if run.error:
            raise SandboxError(f"the original solution could not be run: {run.error}")
        collect_failed = any(c["nodeid"] == HIDDEN_TEST for c in run.collect_errors) and not run.tests
        return not run.import_errors and collect_failed


def judged(table: dict, run: TestRun) -> list[TestOutcome]:
    """Each graded test of the host table judged on the held-out run's report (on the host)."""
    oracle = table.get("oracle")
    out = []
    for test_id, entry in sorted(table["tests"].items()):
        found = run.instances(test_id)
        if not found:
            out.append(TestOutcome(test_id, GROUP, "missing"))
            continue
        if oracle is not None and set(found) != {k for k in oracle if k == test_id or k.startswith(test_id + "[")}:
            out.append(TestOutcome(test_id, GROUP, "failed"))
            continue
        ok = all(judge(table["checks"], entry["required"], r.outcome, r.observed,
                       oracle[key] if oracle is not None else None, row_of(entry, key), table.get("loops"))
                 for key, r in found.items())
        out.append(TestOutcome(test_id, GROUP, "passed" if ok else "failed"))
    return out


def grade_bugsinpy(task: Task, workspace: Path, factory: SandboxFactory, **options: Any) -> Grade:
    """Grade by the BugsInPy rules (the registry's `bugsinpy` grader)."""
    return BugsInPyGrader().grade(task, workspace, factory, **options)
