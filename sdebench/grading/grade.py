"""Two-phase, default-fail grading (see docs/design.md, 'Grading semantics', and docs/grading.md).

`grade(task, workspace, factory, **options)` picks the task's grader from the registry. The
two-phase grader copies the submitted workspace, puts every test file, conftest.py and pytest
config back to its pristine HEAD content and strips bytecode and start-up hooks (the rules live
in `sdebench.grading.rules`), then grades it in two sandboxes, one phase after the other:

- both copies are put in their sandboxes, then both runners start at once; phase 2's stops,
  before any workspace code runs, at a gate only the host opens (`testrun.Gate`);
- phase 1 (visible): the visible tests as written, plus a honeypot in a graded module. When it is
  over, its sandbox's processes are gone and its part of the feedback is fixed
  (`sdebench.grading.feedback`);
- phase 2 (held out): only then is its gate opened. A fresh copy with the visible tests replaced
  by their observation versions and the hidden observation tests added; the runner reports
  observed values, which are compared here, on the host, with the oracle's (never sent into any
  sandbox). Nothing of this phase but the verdict the feedback policy allows reaches the agent.

A visible test passes only if it passed in phase 1 and its re-check in phase 2 matched; a hidden
test only if its observations match. The grader never raises. Error or outcome is decided by
where a failure comes from: `error` (the episode is an error, not an outcome) only for what is
shown independently of the submission: before any submitted code runs (options, a broken task,
a sandbox or runner that cannot start, a host disk that is full), or a held-out runner that
cannot start even alone, once nothing of phase 1 runs or is left. Once submitted code may have
run, anything else that goes wrong is an unresolved outcome with its reason kept on the host.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from sdebench.grading import rules
from sdebench.grading.feedback import (
    HELD_OUT_FAIL,  # noqa: F401 - re-exported
    VisibleFeedback,
    compose,
    held_out_line,
    held_out_view,
    reward_of,
    shown_counts,
    visible_feedback,
)
from sdebench.grading.honeypot import make_honeypot
from sdebench.grading.options import DEFAULT_FEEDBACK, GradeOptions, OptionError
from sdebench.grading.records import clean_text
from sdebench.grading.rewards import rewards
from sdebench.grading.rules import is_protected, is_source, is_test_path  # noqa: F401 - re-exported
from sdebench.grading.testrun import STARTUP_S, Gate, TestRun, run_tests
from sdebench.sandbox.base import Sandbox, SandboxError, SandboxFactory
from sdebench.sandbox.files import copy_tree
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task, TaskError

GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS", "HIDDEN_TO_PASS")
DEFAULT_TIMEOUT = GradeOptions.timeout
RECHECK_MSG = "passed as written but failed when re-checked on plain data in the held-out phase"
# Host failures that no submission can cause: on these the grade is an error even while the
# submission's files are read (a full disk, a failing device).
HOST_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.ENOMEM})
STOPPED = "The grade stopped on this submission: its files or its test output could not be processed."
READY_WAIT_S = 2 * STARTUP_S + 60  # a runner reaches its gate or ends within this (its clock bounds it)


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
    reward: dict[str, Any] = field(default_factory=dict)  # counts held-out tests only as the policy reveals them
    error: str | None = None  # infrastructure failure: the episode is an error
    notes: list[str] = field(default_factory=list)  # what the pristine copy changed or dropped
    feedback_policy: str = DEFAULT_FEEDBACK
    held_out: dict[str, Any] = field(default_factory=dict)  # host-only facts about phase 2 (never fed back)
    phases_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (everything: for records on the host)."""
        return asdict(self)

    def shown_visible(self) -> list[TestOutcome]:
        """The visible tests as phase 1 reported them (a failed held-out re-check is part of the
        held-out view, not of the visible outcomes)."""
        rechecked = set(self.held_out.get("recheck_failed", []))
        return [TestOutcome(t.id, t.group, "passed") if t.id in rechecked else t
                for t in self.tests if t.group != "HIDDEN_TO_PASS"]

    def view(self) -> dict[str, Any] | None:
        """What the feedback policy lets an agent learn of phase 2 (None: it did not run). A phase 2
        that did not finish cleanly passes nothing."""
        if not self.tests or self.guards or self.error is not None:
            return None
        hidden = [t for t in self.tests if t.group == "HIDDEN_TO_PASS"]
        faulted = bool(self.held_out.get("fault"))
        failing = [t.id for t in hidden if faulted or t.outcome != "passed"]
        rechecks = list(self.held_out.get("recheck_failed", []))
        return held_out_view(self.feedback_policy, failing, rechecks, len(hidden), not faulted)

    def public(self) -> dict[str, Any]:
        """What an agent may learn from this grade: the verdict, the feedback, the visible tests as
        phase 1 reported them, and about held-out tests only what the feedback policy reveals."""
        view = self.view()
        visible = self.shown_visible()
        hidden_total = sum(t.group == "HIDDEN_TO_PASS" for t in self.tests)
        return {
            "task_id": self.task_id,
            "resolved": self.resolved,
            "feedback_policy": self.feedback_policy,
            "guards": list(self.guards),
            "error": self.error,
            "feedback": self.feedback,
            "reward": self.reward,
            "visible": [asdict(t) for t in visible],
            "counts": shown_counts(visible, view, hidden_total),
            "held_out": view,
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


# --- verdict ------------------------------------------------------------------------------
def _counts(tests: list[TestOutcome]) -> dict[str, dict[str, int]]:
    counts = {g: {"passed": 0, "total": 0} for g in GROUPS}
    for t in tests:
        counts[t.group]["total"] += 1
        counts[t.group]["passed"] += t.outcome == "passed"
    return counts


def _not_run(task: Task, why: str, groups: tuple[str, ...] = GROUPS) -> list[TestOutcome]:
    return [TestOutcome(i, g, "missing", f"not run: {why}" if g != "HIDDEN_TO_PASS" else "")
            for g, ids in task.tests.groups().items() if g in groups for i in ids]


def _visible_outcomes(task: Task, p1: TestRun) -> list[TestOutcome]:
    """The visible tests as phase 1 reported them."""
    out = []
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        for i in task.tests.groups()[group]:
            r = p1.outcome(i)
            out.append(TestOutcome(i, group, r.outcome, r.message))
    return out


@dataclass
class _Verdicts:
    """Both phases judged: the outcome per test id, and the held-out facts."""

    tests: list[TestOutcome]
    recheck_failed: list[str]  # visible ids that passed phase 1 but not their phase-2 re-check
    hidden_failed: list[str]


def _judge(task: Task, visible: list[TestOutcome], p2: TestRun, expected: dict[str, list]) -> _Verdicts:
    """Combine phase 1 outcomes with phase 2 observations compared here against `expected`."""
    reported = {k: (r.outcome, list(r.observed) if r.observed is not None else None) for k, r in p2.tests.items()}
    phase1 = {t.id: t for t in visible}
    tests, recheck, hidden_failed = [], [], []
    for group, ids in task.tests.groups().items():
        for i in ids:
            ok2 = rules.observed_verdict(expected, reported, i)
            if group == "HIDDEN_TO_PASS":
                tests.append(TestOutcome(i, group, "passed" if ok2 else ("missing" if not p2.instances(i) else "failed")))
                if not ok2:
                    hidden_failed.append(i)
                continue
            if phase1[i].outcome == "passed" and not ok2:
                recheck.append(i)
                tests.append(TestOutcome(i, group, "failed", RECHECK_MSG))
            else:
                tests.append(phase1[i])
    return _Verdicts(tests, recheck, hidden_failed)


# --- the grader ---------------------------------------------------------------------------
def grade(task: Task, workspace: Path, sandbox: SandboxFactory, **options: Any):
    """Grade the host dir `workspace` for `task` with the grader its `grader` field names; never raises.

    Options: `options=GradeOptions(...)` (sdebench.grading.options, the `grading` config group), or
    its fields as keywords.
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
    error = clean_text(error, 2000)
    return Grade(task.id, False, tests, counts, 0.0, [], time.monotonic() - start,
                 f"Not resolved.\n- The grade could not run: {error}", rewards(False, 0.0, None), error, notes or [],
                 opts.feedback_hidden)


@dataclass
class _State:
    """How far one grade got: the last-resort handler tells an error from a fault by it."""

    stage: str = "setup"  # setup | workspace | boot: no submitted code has run; visible | held_out: it may have
    notes: list[str] = field(default_factory=list)
    visible: list[TestOutcome] | None = None  # phase-1 outcomes, once read
    feedback: VisibleFeedback | None = None  # phase-1 feedback, once fixed
    times: dict[str, float] = field(default_factory=dict)
    held: dict[str, Any] = field(default_factory=dict)


def _is_error(stage: str, exc: BaseException) -> bool:
    """Whether a failure at `stage` is shown independently of the submission (an infrastructure error)."""
    if stage in ("setup", "boot"):
        return True  # nothing of the submission has been read or run yet, or only by the sandbox's own copy
    host = isinstance(exc, OSError) and exc.errno in HOST_ERRNOS
    return stage == "workspace" and host


def _end(box: Sandbox) -> None:
    """Close `box` once no process its commands started is left (a backend that may leave some
    after a command ends offers `end_processes`)."""
    try:
        stop = getattr(box, "end_processes", None)
        if callable(stop):
            stop()
    finally:
        box.close()


class TwoPhaseGrader:
    """The grader of generated tasks (registry name `sdebench`)."""

    def grade(self, task: Task, workspace: Path, factory: SandboxFactory, options: GradeOptions | None = None,
              **values: Any) -> Grade:
        """Grade `workspace` for `task`; never raises (see the module docstring)."""
        start = time.monotonic()
        try:
            opts = GradeOptions.given(options, values)
        except (OptionError, TypeError) as e:
            return _error_grade(task, start, str(e), GradeOptions())
        st = _State()
        tmp: Path | None = None
        try:
            tmp = Path(tempfile.mkdtemp(prefix="g-"))
            return self._grade(task, Path(workspace), factory, tmp, opts, start, st)
        except Exception as e:  # noqa: BLE001 - the grader never raises; where it failed decides what it was
            why = f"{type(e).__name__}: {e}"
            if _is_error(st.stage, e):
                return _error_grade(task, start, why, opts, st.notes)
            return self._stopped(task, start, st, why, opts)
        finally:
            if tmp is not None and not opts.keep_dir:
                shutil.rmtree(tmp, ignore_errors=True)

    def _grade(self, task: Task, workspace: Path, factory: SandboxFactory, tmp: Path, opts: GradeOptions,
               start: float, st: _State) -> Grade:
        if not workspace.is_dir():
            return _error_grade(task, start, f"workspace {workspace} is not a directory", opts)
        try:
            expected = task.expected_observations()
            overlay = {**task.observed_files(), **task.hidden_files()}
        except (TaskError, OSError) as e:
            return _error_grade(task, start, f"broken task: {e}", opts)
        pristine = pristine_tree(task)
        if pristine.head_sha != task.head_sha:
            return _error_grade(task, start, f"task bundle HEAD {pristine.head_sha[:12]} does not match task.toml "
                                f"head_sha {task.head_sha[:12]}", opts)
        st.stage = "workspace"  # the submission's files are read from here on
        ws1, ws2 = tmp / "1" / "repo", tmp / "2" / "repo"
        try:
            copied = copy_tree(workspace, ws1, skip_git=True, max_bytes=opts.max_workspace_mb * 1024 * 1024)
        except SandboxError as e:
            guards = {"too_large": f"The workspace cannot be graded: {e}."}
            return self._finish(task, start, st, _not_run(task, "a guard fired"), guards, opts)
        prep = rules.prepare_copy(ws1, pristine.as_dict(), task.test_files)
        st.notes = [clean_text(n, 1000) for n in copied.notes + prep.notes]
        guards: dict[str, str] = {}
        if not prep.changed and not prep.deleted:
            guards["unchanged"] = "No source change: the code is identical to the original, so nothing can be fixed."
            return self._finish(task, start, st, _not_run(task, "a guard fired"), guards, opts)
        for rel, msg in rules.compile_errors(ws1, prep.changed).items():
            guards[clean_text(f"compile:{rel}", 1000)] = clean_text(f"{rel} does not compile: {msg}", 2000)
        if guards:
            return self._finish(task, start, st, _not_run(task, "a guard fired"), guards, opts)

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
        p1_paths = visible_paths + ([pot.test_rel] if pot else [])
        p2_paths = sorted(overlay)

        st.stage = "boot"  # sandboxes open; no submitted code runs yet
        boxes: dict[str, Sandbox] = {}
        try:
            with ThreadPoolExecutor(2) as pool:
                # Both copies are in their sandboxes before either runner starts: how long the
                # held-out copy takes does not move the visible phase's start.
                opening = {name: pool.submit(factory.open, ws, read_only=True)
                           for name, ws in (("visible", ws1), ("held_out", ws2))}
                failures = []
                for name, fut in opening.items():
                    try:
                        boxes[name] = fut.result()
                    except SandboxError as e:
                        failures.append(f"{name} phase: sandbox failure: {e}")
                if failures:
                    return _error_grade(task, start, failures[0], opts, st.notes)
                t0 = time.monotonic()
                gate = Gate()
                held_out = pool.submit(run_tests, boxes["held_out"], p2_paths, modules, timeout=opts.timeout,
                                       mode="observe", shadow_check=prep.added_names,
                                       test_time_limit=opts.test_limit(task.test_time_limit_s), gate=gate)
                st.stage = "visible"  # submitted code runs from here on: nothing after is an error
                visible = pool.submit(run_tests, boxes["visible"], p1_paths, modules, timeout=opts.timeout,
                                      mode="visible", shadow_check=prep.added_names,
                                      test_time_limit=opts.visible_limit())
                try:
                    return self._phases(task, start, st, opts, expected, pot, factory, boxes, visible, held_out,
                                        gate, t0, ws1, ws2, p2_paths, modules, prep.added_names)
                finally:
                    gate.cancel()  # a runner never let through is stopped (a no-op once its gate is open)
        finally:
            # After every run is over (the pool waited for them): each phase's box was ended in _phases.
            for box in boxes.values():
                with contextlib.suppress(Exception):
                    box.close()

    def _phases(self, task: Task, start: float, st: _State, opts: GradeOptions, expected: dict[str, list], pot,
                factory: SandboxFactory, boxes: dict[str, Sandbox], visible: Future, held_out: Future, gate: Gate,
                t0: float, ws1: Path, ws2: Path, p2_paths: list[str], modules: list[str], added: list[str]) -> Grade:
        """Phase 1, then phase 2: its runner starts beside phase 1 and waits at `gate` until phase 1
        is over, its processes are gone and its feedback is fixed."""
        p1 = visible.result()
        if p1.error and not p1.code_ran:
            return _error_grade(task, start, f"visible phase: {p1.error}", opts, st.notes)
        _end(boxes["visible"])  # no process of phase 1 is left when phase 2's workspace code starts
        st.times["visible"] = round(time.monotonic() - t0, 4)
        st.held["visible_ended_at"] = time.time()
        guards: dict[str, str] = {}
        for name, where in sorted(p1.shadowed.items()):
            guards[f"shadow:{name}"] = (f"The top-level name {name!r} of your workspace is also importable from "
                                        f"{where}: it would stand in for that module, so the code was not tested.")
        if guards:
            return self._finish(task, start, st, _not_run(task, "a guard fired"), guards, opts)
        for mod, msg in sorted(p1.import_errors.items()):
            guards[f"import:{mod}"] = f"module {mod} fails to import: {msg.splitlines()[-1] if msg else ''}"
        if p1.tampered or (pot is not None and p1.finished and not p1.import_errors and pot.tampered(p1)):
            guards["tampering"] = ("The test run was tampered with: the grader's control checks gave wrong results, "
                                   "so no outcome of this run is trusted.")
        fault = p1.fault or p1.error
        st.visible = _visible_outcomes(task, p1)
        # The phase-1 part of the feedback is fixed here, before any held-out code runs.
        st.feedback = visible_feedback(st.visible, guards, fault, st.notes, opts)
        if guards:
            # The verdict is known: the held-out phase is not let through at all.
            return self._finish(task, start, st, st.visible + _not_run(task, "", ("HIDDEN_TO_PASS",)), guards, opts,
                                visible_fault=fault)

        st.stage = "held_out"
        t2 = time.monotonic()
        gate.ready.wait(READY_WAIT_S)
        if gate.reached:
            st.held["released_at"] = time.time()
            try:
                gate.open(boxes["held_out"])
                p2 = held_out.result()
            except (SandboxError, OSError) as e:
                p2 = TestRun(fault=f"the held-out phase could not be let through: {e}")
        else:
            gate.cancel()
            p2 = held_out.result()
            if not p2.started:
                # Its runner started while submitted code ran in phase 1, which may have starved it:
                # once more, alone, with nothing of phase 1 left. If it cannot start then, the
                # cause is not the submission.
                st.held["held_out_restarted"] = p2.error or "its runner did not start"
                p2 = self._held_out_alone(factory, boxes, ws1, ws2, p2_paths, modules, added, task, opts)
                if p2.error and not p2.code_ran:
                    return _error_grade(task, start, f"held-out phase: {p2.error}", opts, st.notes)
        with contextlib.suppress(Exception):
            _end(boxes["held_out"])
        st.times["held_out"] = round(time.monotonic() - t2, 4)
        v = _judge(task, st.visible, p2, expected)
        st.held.update({"fault": p2.fault or p2.error, "tampered": bool(p2.tampered),
                        "import_errors": sorted(p2.import_errors), "shadowed": sorted(p2.shadowed),
                        "recheck_failed": v.recheck_failed, "timed_out": len(p2.timed_out_tests),
                        "reruns": p2.reruns, "malformed_lines": p2.malformed})
        return self._finish(task, start, st, v.tests, {}, opts, visible_fault=fault)

    @staticmethod
    def _held_out_alone(factory: SandboxFactory, boxes: dict[str, Sandbox], ws1: Path, ws2: Path, paths: list[str],
                        modules: list[str], added: list[str], task: Task, opts: GradeOptions) -> TestRun:
        """Phase 2 in a fresh sandbox on its copy `ws2`, once nothing of phase 1 is running or left
        behind (its copy, with what it wrote, removed; its sandbox gone)."""
        for name in ("visible", "held_out"):
            box = boxes.pop(name, None)
            if box is not None:
                with contextlib.suppress(Exception):
                    box.close()
                removal = getattr(box, "removal", None)
                if removal is not None:
                    removal.join(READY_WAIT_S)
        shutil.rmtree(ws1, ignore_errors=True)
        try:
            boxes["held_out"] = factory.open(ws2, read_only=True)
        except SandboxError as e:
            return TestRun(error=f"sandbox failure: {e}")
        return run_tests(boxes["held_out"], paths, modules, timeout=opts.timeout, mode="observe", shadow_check=added,
                         test_time_limit=opts.test_limit(task.test_time_limit_s))

    def _finish(self, task: Task, start: float, st: _State, tests: list[TestOutcome], guards: dict[str, str],
                opts: GradeOptions, visible_fault: str | None = None) -> Grade:
        """The grade: the verdict, and what the agent is shown of it (phase-1 feedback plus the policy's view)."""
        counts = _counts(tests)
        total = sum(c["total"] for c in counts.values())
        passed = sum(c["passed"] for c in counts.values())
        # Default-fail: a phase that did not finish cleanly resolves nothing, whatever it reported.
        clean = visible_fault is None and not st.held.get("fault")
        resolved = not guards and clean and total > 0 and passed == total
        g = Grade(task.id, resolved, tests, counts, passed / total if total else 0.0, list(guards),
                  time.monotonic() - start, "", {}, None, st.notes, opts.feedback_hidden, st.held, st.times)
        vf = st.feedback or visible_feedback(None, guards, None, st.notes, opts)
        view = g.view()
        g.feedback = compose(vf, resolved, held_out_line(opts.feedback_hidden, view), opts)
        g.reward = reward_of(shown_counts(g.shown_visible(), view, len(task.tests.hidden_to_pass)), resolved,
                             bool(guards), opts.step_cost)
        return g

    def _stopped(self, task: Task, start: float, st: _State, why: str, opts: GradeOptions) -> Grade:
        """An unresolved outcome for a grade that failed once the submission was read or run: the
        reason stays on the host; the agent sees the phase-1 feedback if it was fixed, else a fixed line."""
        st.held.update({"fault": f"grading stopped: {why}", "grader_fault": why})
        if st.feedback is None:
            st.feedback = VisibleFeedback((f"- {STOPPED}",), tuple(f"- {n}" for n in st.notes[:20]), False)
        tests = (st.visible or _not_run(task, "the grade stopped", ("FAIL_TO_PASS", "PASS_TO_PASS")))
        tests = tests + _not_run(task, "", ("HIDDEN_TO_PASS",))
        try:
            return self._finish(task, start, st, tests, {}, opts)
        except Exception:  # noqa: BLE001 - the last resort of the last resort: a fixed outcome
            tests = _not_run(task, "the grade stopped")
            return Grade(task.id, False, tests, _counts(tests), 0.0, [], time.monotonic() - start,
                         f"Not resolved.\n- {STOPPED}", rewards(False, 0.0, None), None, [], opts.feedback_hidden,
                         {"fault": f"grading stopped: {why}"})
