"""The BugsInPy-v2 verifier as an sdebench grading mode (`grader = "bugsinpy"`).

Rules, in order (default-fail: anything unexpected scores 0):
1. no-op guard: `solution.py` missing or byte-identical to the task's HEAD -> 0;
2. compile guard: `solution.py` must compile (checked inside the sandbox's Python);
3. import guard: `import solution` must succeed;
4. the hidden test file runs: reward 1 iff passed > 0 and failed == 0 (errors count as failed);
5. fallback: if the test file cannot be collected, and cannot be collected against the original
   solution either (broken independently of the fix), reward 1 iff rules 1-3 held;
pass_ratio = passed / (passed + failed), 0 when nothing ran.
The workspace is copied; only its non-test files are graded, the hidden test is added to the copy.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from sdebench.grading.grade import Grade, TestOutcome
from sdebench.grading.testrun import TestRun, run_tests
from sdebench.interop.bugsinpy import HIDDEN_TEST, SOLUTION
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

GROUP = "HIDDEN_TO_PASS"
DEFAULT_TIMEOUT = 120.0
FAILED = ("failed", "error")
# Never copied into the graded dir: agent-made pytest configs, start-up hooks, caches, tests.
DROP_NAMES = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sitecustomize.py",
     "usercustomize.py"}
)
DROP_DIRS = frozenset({".git", "__pycache__", "tests", ".pytest_cache"})
COMPILE_CHECK = "import sys; compile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec')"


def _copy_graded(src: Path, dest: Path) -> None:
    """Copy the agent's files that the verifier looks at."""
    dest.mkdir(parents=True)
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if any(part in DROP_DIRS for part in rel.parts) or p.is_symlink() or not p.is_file():
            continue
        if p.name in DROP_NAMES or p.suffix in (".pyc", ".pyo", ".pth", ".so"):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest / rel)


def original_solution(task: Task) -> bytes:
    """The HEAD `solution.py` of the task's repo."""
    with tempfile.TemporaryDirectory(prefix="sdebench-bugsinpy-") as tmp:
        dest = repo_mod.unbundle(task.bundle, Path(tmp) / "repo")
        return (dest / SOLUTION).read_bytes()


def _hidden_test(task: Task) -> str:
    hidden = task.hidden_files()
    if HIDDEN_TEST not in hidden:
        raise FileNotFoundError(f"task {task.id} has no hidden {HIDDEN_TEST}")
    return hidden[HIDDEN_TEST]


def _collect_failed(run: TestRun) -> bool:
    return bool(run.collect_errors) and not run.tests


def _reward(resolved: bool, ratio: float) -> dict[str, Any]:
    # Same keys as sdebench.grading.rewards.rewards; no shaped reward: the dataset has no baseline split.
    return {"binary": 1.0 if resolved else 0.0, "pass_ratio": round(ratio, 6), "shaped": None,
            "shaped_breakdown": None, "verifier": "bugsinpy"}


def _result(task: Task, start: float, resolved: bool, guards: dict[str, str], tests: list[TestOutcome],
            ratio: float, error: str | None, note: str = "") -> Grade:
    passed = sum(t.outcome == "passed" for t in tests)
    lines = ["Resolved." if resolved else "Not resolved."]
    lines += [f"- {why}" for why in guards.values()]
    if error:
        lines.append(f"- The test run failed: {error}")
    if tests:
        lines.append(f"- Hidden tests: {passed} of {len(tests)} pass.")
    if note:
        lines.append(f"- {note}")
    return Grade(
        task_id=task.id,
        resolved=resolved,
        tests=tests,
        counts={GROUP: {"passed": passed, "total": len(tests)}},
        pass_ratio=ratio,
        guards=list(guards),
        duration_s=time.monotonic() - start,
        feedback="\n".join(lines),
        reward=_reward(resolved, ratio),
        error=error,
    )


def grade_bugsinpy(task: Task, workspace: Path, factory: SandboxFactory, **options: Any) -> Grade:
    """Grade `workspace` for an imported BugsInPy task by that dataset's verifier rules; never raises.

    Options: timeout (seconds for the test run).
    """
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="sdebench-bugsinpy-grade-"))
    try:
        return _grade(task, Path(workspace), factory, tmp, float(options.get("timeout", DEFAULT_TIMEOUT)), start)
    except Exception as e:  # noqa: BLE001 - the grader never raises; the reason is the grade
        return _result(task, start, False, {}, [], 0.0, f"{type(e).__name__}: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _grade(task: Task, workspace: Path, factory: SandboxFactory, tmp: Path, timeout: float, start: float) -> Grade:
    if not workspace.is_dir():
        return _result(task, start, False, {}, [], 0.0, f"workspace {workspace} is not a directory")
    ws = tmp / "ws"
    _copy_graded(workspace, ws)
    sol = ws / SOLUTION
    if not sol.is_file():
        return _result(task, start, False, {"missing": f"{SOLUTION} is missing: nothing to grade."}, [], 0.0, None)
    if sol.read_bytes() == original_solution(task):
        why = f"{SOLUTION} is unchanged: an unedited solution scores 0."
        return _result(task, start, False, {"unchanged": why}, [], 0.0, None)
    test_src = _hidden_test(task)
    (ws / HIDDEN_TEST).parent.mkdir(parents=True, exist_ok=True)
    (ws / HIDDEN_TEST).write_text(test_src)
    with factory.open(ws) as box:
        comp = box.exec(["python3", "-E", "-s", "-B", "-c", COMPILE_CHECK, SOLUTION], timeout=60)
        if comp.exit_code != 0 or comp.timed_out:
            last = (comp.stderr.strip().splitlines() or ["compile check timed out"])[-1]
            return _result(task, start, False, {f"compile:{SOLUTION}": f"{SOLUTION} does not compile: {last}"},
                           [], 0.0, None)
        run = run_tests(box, [HIDDEN_TEST], ["solution"], timeout=timeout)
    if "solution" in run.import_errors:
        msg = run.import_errors["solution"].strip().splitlines() or [""]
        return _result(task, start, False, {"import:solution": f"solution fails to import: {msg[-1]}"}, [], 0.0, None)
    if run.error is not None and not _collect_failed(run):
        return _result(task, start, False, {}, _outcomes(run), _ratio(run), run.error)
    if _collect_failed(run):
        if _collects_with_original(task, test_src, factory, tmp, timeout):
            note = "The hidden test file cannot be collected against this solution (it can against the original)."
            return _result(task, start, False, {}, [], 0.0, None, note)
        note = "The hidden test file cannot be collected at all: the basic check (changed, compiles, imports) decides."
        return _result(task, start, True, {}, [], 0.0, None, note)
    tests = _outcomes(run)
    passed = sum(t.outcome == "passed" for t in tests)
    failed = sum(t.outcome in FAILED for t in tests)
    return _result(task, start, passed > 0 and failed == 0, {}, tests, _ratio(run), None)


def _outcomes(run: TestRun) -> list[TestOutcome]:
    return [TestOutcome(k, GROUP, v.outcome, v.message) for k, v in sorted(run.tests.items())]


def _ratio(run: TestRun) -> float:
    passed = sum(v.outcome == "passed" for v in run.tests.values())
    failed = sum(v.outcome in FAILED for v in run.tests.values())
    return passed / (passed + failed) if passed + failed else 0.0


def _collects_with_original(task: Task, test_src: str, factory: SandboxFactory, tmp: Path, timeout: float) -> bool:
    """Whether the hidden test file collects against the original solution."""
    base = tmp / "original"
    (base / "tests").mkdir(parents=True)
    (base / SOLUTION).write_bytes(original_solution(task))
    (base / HIDDEN_TEST).write_text(test_src)
    with factory.open(base) as box:
        run = run_tests(box, [HIDDEN_TEST], [], timeout=timeout)
    return not _collect_failed(run) and run.error is None
