"""Two-phase, default-fail grading (see docs/design.md, 'Grading semantics', and docs/grading.md).

`grade(task, workspace, factory, **options)` picks the task's grader from the registry. The
two-phase grader copies the submitted workspace, puts every test file, conftest.py and pytest
config back to its pristine HEAD content and strips bytecode and start-up hooks (the rules live
in `sdebench.grading.rules`), then grades it in two sandboxes at once:

- phase 1 (visible): the visible tests as written, plus a honeypot in a graded module; its
  failing output may be fed back;
- phase 2 (held out): a fresh copy with the visible tests replaced by their observation versions
  and the hidden observation tests added; the runner reports observed values, which are compared
  here, on the host, with the oracle's (never sent into any sandbox). Nothing of this phase but
  the verdict the feedback policy allows reaches the agent.

A visible test passes only if it passed in phase 1 and its re-check in phase 2 matched; a hidden
test only if its observations match. A grade that could not run (the runner never started, the
sandbox failed, a broken task) has `error` set: the episode is an error, not an outcome.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from sdebench.grading import rules
from sdebench.grading.honeypot import make_honeypot
from sdebench.grading.options import GradeOptions, OptionError
from sdebench.grading.rewards import rewards, shaped
from sdebench.grading.rules import is_protected, is_source, is_test_path  # noqa: F401 - re-exported
from sdebench.grading.testrun import TestRun, run_tests
from sdebench.sandbox.base import SandboxError, SandboxFactory
from sdebench.sandbox.files import copy_tree
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task, TaskError

GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS", "HIDDEN_TO_PASS")
DEFAULT_TIMEOUT = GradeOptions.timeout
REDACTED = "[redacted]"
MIN_REDACT_LINE = 8  # hidden-test lines shorter than this are too generic to redact
HELD_OUT_FAIL = "Held-out tests fail."
RECHECK_MSG = "passed as written but failed when re-checked on plain data in the held-out phase"


@dataclass(frozen=True)
class TestOutcome:
    """One graded test (a hidden test's message is always empty: phase 2 text stays on the host)."""

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
    reward: dict[str, Any] = field(default_factory=dict)  # counts hidden tests only as the policy reveals them
    error: str | None = None  # infrastructure failure: the episode is an error
    notes: list[str] = field(default_factory=list)  # what the pristine copy changed or dropped
    feedback_policy: str = "binary"
    held_out: dict[str, Any] = field(default_factory=dict)  # host-only facts about phase 2 (never fed back)
    phases_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (everything: for records on the host)."""
        return asdict(self)

    def public(self) -> dict[str, Any]:
        """What an agent may learn from this grade: the verdict, the feedback, the visible tests,
        and about held-out tests only what the feedback policy reveals."""
        hidden = [t for t in self.tests if t.group == "HIDDEN_TO_PASS"]
        failing = [t.id for t in hidden if t.outcome != "passed"]
        view: dict[str, Any] = {"pass": not failing and not self.held_out.get("recheck_failed")}
        if self.feedback_policy in ("counts", "tests"):
            view.update(failed=len(failing), total=len(hidden), rechecks_failed=len(self.held_out.get("recheck_failed", [])))
        if self.feedback_policy == "tests":
            view.update(failing=failing, rechecks=list(self.held_out.get("recheck_failed", [])))
        ran = bool(self.tests) and not self.guards and self.error is None
        return {
            "task_id": self.task_id,
            "resolved": self.resolved,
            "feedback_policy": self.feedback_policy,
            "guards": list(self.guards),
            "error": self.error,
            "feedback": self.feedback,
            "reward": self.reward,
            "visible": [asdict(t) for t in self.tests if t.group != "HIDDEN_TO_PASS"],
            "held_out": view if ran else None,
            "notes": list(self.notes),
        }


# --- the pristine tree --------------------------------------------------------------------
@dataclass(frozen=True)
class Pristine:
    """The HEAD tree of a task's repo: sha and path -> bytes (immutable, shared per process)."""

    head_sha: str
    files: tuple[tuple[str, bytes], ...]

    def as_dict(self) -> dict[str, bytes]:
        """A fresh path -> bytes dict."""
        return dict(self.files)


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class _BundleRef:
    """A bundle identified by its content hash alone (its path does not take part in equality)."""

    digest: str
    path: str = field(compare=False)


@lru_cache(maxsize=64)
def _pristine_cached(ref: _BundleRef) -> Pristine:
    # Keyed by the bundle's content hash: a regenerated task never reuses an old tree.
    with tempfile.TemporaryDirectory(prefix="pristine-") as tmp:
        dest = repo_mod.unbundle(Path(ref.path), Path(tmp) / "repo")
        files = tuple((rel, (dest / rel).read_bytes()) for rel in repo_mod.tracked_files(dest))
        return Pristine(repo_mod.head_sha(dest), files)


def pristine_tree(task: Task) -> Pristine:
    """The HEAD tree of `task` (cached per process by bundle content)."""
    return _pristine_cached(_BundleRef(_file_digest(task.bundle), str(task.bundle.resolve())))


# --- feedback -----------------------------------------------------------------------------
def redact(text: str, hidden_sources: list[str], tokens: tuple[str, ...]) -> str:
    """Remove hidden-test lines and fact tokens from text shown to the agent."""
    lines = {
        ln.strip() for src in hidden_sources for ln in src.splitlines() if len(ln.strip()) >= MIN_REDACT_LINE
    }
    for ln in sorted(lines, key=len, reverse=True):
        text = text.replace(ln, REDACTED)
    for tok in sorted((t for t in tokens if len(t.strip()) >= 2), key=len, reverse=True):
        text = re.sub(re.escape(tok), REDACTED, text, flags=re.IGNORECASE)
    return text


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else "[...]\n" + text[-n:]


@dataclass
class _Verdicts:
    """Both phases judged: outcome per test id, what phase 1 said, and the held-out facts."""

    tests: list[TestOutcome]
    phase1: dict[str, TestOutcome]  # visible id -> its phase-1 outcome (message shown to the agent)
    recheck_failed: list[str]  # visible ids that passed phase 1 but not their phase-2 re-check
    hidden_failed: list[str]


def held_out_line(policy: str, v: _Verdicts, hidden_total: int) -> str | None:
    """The one statement the feedback makes about phase 2 under `policy` (None: nothing failed)."""
    if not v.hidden_failed and not v.recheck_failed:
        return None
    if policy == "binary":
        return HELD_OUT_FAIL
    line = f"Held-out tests: {len(v.hidden_failed)} of {hidden_total} fail."
    if v.recheck_failed:
        line += f" {len(v.recheck_failed)} visible tests failed their held-out re-check."
    if policy == "tests":
        line += "".join(f"\n- {i}" for i in [*v.hidden_failed, *v.recheck_failed])
    return line


def feedback_text(v: _Verdicts | None, guards: dict[str, str], fault: str | None, notes: list[str],
                  opts: GradeOptions, hidden_total: int) -> str:
    """The text fed back to the agent: guards, phase-1 failures with output, the policy's held-out line."""
    if v is not None and not guards and fault is None and all(t.outcome == "passed" for t in v.tests):
        return f"Resolved: all {len(v.tests)} graded tests pass."
    out = ["Not resolved."]
    out += [f"- {reason}" for reason in guards.values()]
    if fault:
        out.append(f"- The visible test run did not finish: {fault}")
    if v is not None and not any(g == "unchanged" or g.startswith(("compile:", "shadow:")) for g in guards):
        failing = [t for t in v.phase1.values() if t.outcome != "passed"]
        if failing:
            out.append(f"\nFailing visible tests ({len(failing)} of {len(v.phase1)}):")
            for t in failing:
                out.append(f"- {t.id}: {t.outcome}")
                if t.message:
                    out.append("    " + _clip(t.message, opts.per_test_chars).replace("\n", "\n    "))
        line = held_out_line(opts.feedback_hidden, v, hidden_total)
        if line:
            out.append("\n" + line)
    if notes:
        out.append("\nGrader notes (your workspace was normalised before testing):")
        out += [f"- {n}" for n in notes[:20]]
        if len(notes) > 20:
            out.append(f"- ... and {len(notes) - 20} more")
    text = "\n".join(out)
    return text if len(text) <= opts.feedback_chars else text[: opts.feedback_chars - 20] + "\n[... truncated ...]"


# --- verdict ------------------------------------------------------------------------------
def _counts(tests: list[TestOutcome]) -> dict[str, dict[str, int]]:
    counts = {g: {"passed": 0, "total": 0} for g in GROUPS}
    for t in tests:
        counts[t.group]["total"] += 1
        counts[t.group]["passed"] += t.outcome == "passed"
    return counts


def _reward(counts: dict[str, dict[str, int]], resolved: bool, guards: dict, opts: GradeOptions) -> dict[str, Any]:
    """The rewards, with hidden tests counted only as the policy reveals them (binary: all or none)."""
    if guards:
        return rewards(False, 0.0, None)
    hidden = dict(counts["HIDDEN_TO_PASS"])
    if opts.feedback_hidden == "binary" and hidden["passed"] < hidden["total"]:
        hidden["passed"] = 0
    total = sum(c["total"] for c in counts.values())
    passed = counts["FAIL_TO_PASS"]["passed"] + counts["PASS_TO_PASS"]["passed"] + hidden["passed"]
    orig_failing = counts["FAIL_TO_PASS"]["total"] + hidden["total"]
    newly = counts["FAIL_TO_PASS"]["passed"] + hidden["passed"]
    regressions = counts["PASS_TO_PASS"]["total"] - counts["PASS_TO_PASS"]["passed"]
    return rewards(resolved, passed / total if total else 0.0,
                   shaped(True, newly, orig_failing, regressions, resolved, opts.step_cost))


def _not_run(task: Task, why: str) -> list[TestOutcome]:
    return [TestOutcome(i, g, "missing", f"not run: {why}" if g != "HIDDEN_TO_PASS" else "")
            for g, ids in task.tests.groups().items() for i in ids]


def _judge(task: Task, p1: TestRun, p2: TestRun, expected: dict[str, list]) -> _Verdicts:
    """Combine phase 1 outcomes with phase 2 observations compared here against `expected`."""
    reported = {k: (r.outcome, list(r.observed) if r.observed is not None else None) for k, r in p2.tests.items()}
    tests, phase1, recheck, hidden_failed = [], {}, [], []
    for group, ids in task.tests.groups().items():
        for i in ids:
            ok2 = rules.observed_verdict(expected, reported, i)
            if group == "HIDDEN_TO_PASS":
                tests.append(TestOutcome(i, group, "passed" if ok2 else ("missing" if not p2.instances(i) else "failed")))
                if not ok2:
                    hidden_failed.append(i)
                continue
            r1 = p1.outcome(i)
            phase1[i] = TestOutcome(i, group, r1.outcome, r1.message)
            if r1.passed and not ok2:
                recheck.append(i)
                tests.append(TestOutcome(i, group, "failed", RECHECK_MSG))
            else:
                tests.append(phase1[i])
    return _Verdicts(tests, phase1, recheck, hidden_failed)


# --- the grader ---------------------------------------------------------------------------
def grade(task: Task, workspace: Path, sandbox: SandboxFactory, **options: Any):
    """Grade the host dir `workspace` for `task` with the grader its `grader` field names; never raises.

    Options: the fields of sdebench.grading.options.GradeOptions (the `grading` config group).
    """
    from sdebench.components import ComponentError, grader_for

    try:
        grader = grader_for(task)
    except ComponentError as e:
        return _error_grade(task, time.monotonic(), str(e), GradeOptions())
    return grader(task, workspace, sandbox, **options)


def grade_two_phase(task: Task, workspace: Path, sandbox: SandboxFactory, **options: Any):
    """Grade by the two-phase rules of generated tasks (the grader named `sdebench`); never raises."""
    return TwoPhaseGrader().grade(task, workspace, sandbox, **options)


def _error_grade(task: Task, start: float, error: str, opts: GradeOptions, notes: list[str] | None = None) -> Grade:
    tests = _not_run(task, "grading failed")
    counts = _counts(tests)
    return Grade(task.id, False, tests, counts, 0.0, [], time.monotonic() - start,
                 f"Not resolved.\n- The grade could not run: {error}", rewards(False, 0.0, None), error, notes or [],
                 opts.feedback_hidden)


class TwoPhaseGrader:
    """The grader of generated tasks (registry name `sdebench`)."""

    def grade(self, task: Task, workspace: Path, factory: SandboxFactory, **options: Any) -> Grade:
        """Grade `workspace` for `task`; never raises (see the module docstring)."""
        start = time.monotonic()
        try:
            opts = GradeOptions.from_mapping(options)
        except (OptionError, TypeError) as e:
            return _error_grade(task, start, str(e), GradeOptions())
        tmp = Path(tempfile.mkdtemp(prefix="g-"))
        try:
            return self._grade(task, Path(workspace), factory, tmp, opts, start)
        except Exception as e:  # noqa: BLE001 - the grader never raises; the reason is the grade
            return _error_grade(task, start, f"{type(e).__name__}: {e}", opts)
        finally:
            if not opts.keep_dir:
                shutil.rmtree(tmp, ignore_errors=True)

    def _grade(self, task: Task, workspace: Path, factory: SandboxFactory, tmp: Path, opts: GradeOptions,
               start: float) -> Grade:
        if not workspace.is_dir():
            return _error_grade(task, start, f"workspace {workspace} is not a directory", opts)
        try:
            expected = task.expected_observations()
            overlay = {**task.observed_files(), **task.hidden_files()}
        except (TaskError, OSError) as e:
            return _error_grade(task, start, f"broken task: {e}", opts)
        ws1, ws2 = tmp / "1" / "repo", tmp / "2" / "repo"
        try:
            copied = copy_tree(workspace, ws1, skip_git=True, max_bytes=opts.max_workspace_mb * 1024 * 1024)
        except SandboxError as e:
            guards = {"too_large": f"The workspace cannot be graded: {e}."}
            return self._finish(task, start, None, guards, None, [], opts, {})
        pristine = pristine_tree(task)
        if pristine.head_sha != task.head_sha:
            return _error_grade(task, start, f"task bundle HEAD {pristine.head_sha[:12]} does not match task.toml "
                                f"head_sha {task.head_sha[:12]}", opts)
        prep = rules.prepare_copy(ws1, pristine.as_dict(), task.test_files)
        notes = copied.notes + prep.notes
        guards: dict[str, str] = {}
        if not prep.changed and not prep.deleted:
            guards["unchanged"] = "No source change: the code is identical to the original, so nothing can be fixed."
            return self._finish(task, start, None, guards, None, notes, opts, {})
        for rel, msg in rules.compile_errors(ws1, prep.changed).items():
            guards[f"compile:{rel}"] = f"{rel} does not compile: {msg}"
        if guards:
            return self._finish(task, start, None, guards, None, notes, opts, {})

        shutil.copytree(ws1, ws2)
        for rel, content in overlay.items():
            rules.force_write(ws2, rel, content.encode())
        visible_paths = sorted({i.split("::")[0] for g in ("FAIL_TO_PASS", "PASS_TO_PASS")
                                for i in task.tests.groups()[g]})
        first = task.tests.fail_to_pass[0].split("::")[0] if task.tests.fail_to_pass else "test_x.py"
        pot = make_honeypot(ws1, [*prep.changed, *sorted(r for r in pristine.as_dict() if is_source(r, task.test_files))],
                            first)
        if pot is not None:
            pot.install(ws1)
        modules = rules.module_names(prep.changed)
        limit = opts.test_limit(task.test_time_limit_s)
        p1_paths = visible_paths + ([pot.test_rel] if pot else [])
        p2_paths = sorted(overlay)
        times: dict[str, float] = {}
        boxes: list = []

        def phase(name: str, ws: Path, paths: list[str], mode: str) -> TestRun:
            t0 = time.monotonic()
            try:
                box = factory.open(ws, read_only=True)
                boxes.append(box)
                return run_tests(box, paths, modules, timeout=opts.timeout, mode=mode,
                                 shadow_check=prep.added_names, test_time_limit=limit)
            except SandboxError as e:
                return TestRun(error=f"sandbox failure: {e}")
            finally:
                times[name] = round(time.monotonic() - t0, 4)

        try:
            with ThreadPoolExecutor(2) as pool:
                f1 = pool.submit(phase, "visible", ws1, p1_paths, "visible")
                f2 = pool.submit(phase, "held_out", ws2, p2_paths, "observe")
                p1, p2 = f1.result(), f2.result()
        finally:
            # Both closed once both are done: tearing one down must not take CPU from the other.
            with contextlib.ExitStack() as stack:
                for box in boxes:
                    stack.push(box)  # each one's __exit__ runs, even if another's raises
        if p1.error or p2.error:
            which = "visible" if p1.error else "held-out"
            return _error_grade(task, start, f"{which} phase: {p1.error or p2.error}", opts, notes)

        for name, where in sorted(p1.shadowed.items()):
            guards[f"shadow:{name}"] = (f"The top-level name {name!r} of your workspace is also importable from "
                                        f"{where}: it would stand in for that module, so the code was not tested.")
        if guards:
            return self._finish(task, start, None, guards, None, notes, opts, times)
        for mod, msg in sorted(p1.import_errors.items()):
            guards[f"import:{mod}"] = f"module {mod} fails to import: {msg.splitlines()[-1] if msg else ''}"
        if p1.tampered or (pot is not None and p1.finished and not p1.import_errors and pot.tampered(p1)):
            guards["tampering"] = ("The test run was tampered with: the grader's control checks gave wrong results, "
                                   "so no outcome of this run is trusted.")
        verdicts = _judge(task, p1, p2, expected)
        held = {"fault": p2.fault, "tampered": bool(p2.tampered), "import_errors": sorted(p2.import_errors),
                "shadowed": sorted(p2.shadowed), "recheck_failed": verdicts.recheck_failed,
                "timed_out": len(p2.timed_out_tests), "reruns": p2.reruns}
        return self._finish(task, start, verdicts, guards, p1.fault, notes, opts, times, held)

    def _finish(self, task: Task, start: float, v: _Verdicts | None, guards: dict[str, str], fault: str | None,
                notes: list[str], opts: GradeOptions, times: dict[str, float], held: dict | None = None) -> Grade:
        tests = v.tests if v is not None else _not_run(task, "a guard fired" if guards else "not graded")
        counts = _counts(tests)
        total = sum(c["total"] for c in counts.values())
        passed = sum(c["passed"] for c in counts.values())
        # Default-fail: a phase that did not finish cleanly resolves nothing, whatever it reported.
        clean = fault is None and not (held or {}).get("fault")
        resolved = not guards and clean and v is not None and total > 0 and passed == total
        hidden_total = len(task.tests.hidden_to_pass)
        fb = feedback_text(v, guards, fault, notes, opts, hidden_total)
        try:
            hidden_sources = list(task.hidden_files().values())
        except OSError:
            hidden_sources = []
        fb = redact(fb, hidden_sources, task.fact_tokens)
        return Grade(task.id, resolved, tests, counts, passed / total if total else 0.0, list(guards),
                     time.monotonic() - start, fb, _reward(counts, resolved, guards, opts), None, notes,
                     opts.feedback_hidden, held or {}, times)
