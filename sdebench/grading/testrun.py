"""Run pytest inside a sandbox through the runner (`_runner.py`) and read what it reported.

The runner is passed as source text to `python3 -I -B -c`, so neither the environment nor files
in the workspace can change how it starts. Its report, read from the command's output stream as
it arrives (one exec per run, no file fetched after it), is the only source of outcomes: a test
missing from it did not pass. Every line is parsed by `sdebench.grading.records` (bounded, never
raises). The host supervises the run from outside through the runner's progress markers on the
same stream: a test that exceeds the per-test time limit is stopped by killing the whole
sandboxed process tree (no signal the code could block or ignore), recorded as failed, and the
remaining tests run again without it, a bounded number of times.

A run given a `Gate` stops after the runner has started and before any workspace code runs,
until the host opens the gate (the grader uses it to order its two phases).

A run ends in one of three ways: finished (the report's `end` line is there); a `fault` of the
code under test; or an infrastructure `error`. Which one is decided by where the failure comes
from: once workspace code may have run (the runner started and its gate, if any, was opened),
anything that goes wrong (time limits, a crash or exit, malformed lines, even a sandbox failure)
is a fault, an outcome of the submission; before that (no interpreter, no pytest, a sandbox that
failed before the runner started) it is an error.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from sdebench.grading import records, rules
from sdebench.sandbox.base import OUT_DIR, ExecResult, Sandbox, SandboxError

PASSED = rules.PASSED
MISSING = rules.MISSING
DEFAULT_TIMEOUT = 120.0
# The runner's pytest configuration: none at all (`-c /dev/null`), so the repo's pytest.ini,
# tox.ini, setup.cfg or pyproject.toml cannot add options.
NO_CONFIG = "/dev/null"
MAX_RERUNS = 3  # runs restarted after a test hit the per-test limit
STARTUP_S = 60.0  # the interpreter and pytest must start within this (no workspace code runs yet)
COLLECT_FACTOR, COLLECT_FLOOR_S = 3.0, 15.0  # collection imports every test module at once
HOLD_MARGIN_S = 60.0  # a gated run's exec may wait this much longer than its gate needs
MARK = b"\x1e"
MAX_RECORD = records.MAX_LINE  # bytes of one report line (a test's observations are capped at 256 KiB)
MAX_REPORT = 16 << 20  # bytes of report kept per run; what comes after is dropped (the run then never ends)
TIME_LIMIT_MSG = "exceeded the per-test time limit of {:g}s (stopped from outside the sandbox)"


@cache
def runner_source() -> str:
    """The source text of the in-sandbox runner."""
    return Path(__file__).with_name("_runner.py").read_text()


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test id, with its failure text and (observe mode) its observations."""

    outcome: str  # passed | failed | error | skipped | xfailed | xpassed | missing
    message: str = ""
    duration: float = 0.0
    observed: tuple | None = None

    @property
    def passed(self) -> bool:
        """Only a plain pass counts."""
        return self.outcome == PASSED


@dataclass
class TestRun:
    """Everything the runs of one test set in one sandbox reported."""

    tests: dict[str, TestResult] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)
    collect_errors: list[dict] = field(default_factory=list)
    shadowed: dict[str, str] = field(default_factory=dict)  # top-level name -> where else it imports from
    tampered: list[str] = field(default_factory=list)
    started: bool = False
    finished: bool = False
    exit: int | None = None
    error: str | None = None  # infrastructure: no workspace code ran (see the module docstring)
    fault: str | None = None  # the run ended abnormally once workspace code may have run
    timed_out_tests: list[str] = field(default_factory=list)
    reruns: int = 0
    malformed: int = 0  # lines with the runner's prefix that were not records (forged or torn)
    forged: list[str] = field(default_factory=list)  # how the report broke its form (a second start, ...)
    output: str = ""  # the runner's stdout and stderr, progress markers removed (capped)
    exec: ExecResult | None = None
    code_ran: bool = False  # workspace code may have run (from then on, nothing is an error)

    @property
    def problem(self) -> str | None:
        """Why the run is incomplete (error or fault), None when it finished."""
        return self.error or self.fault

    def outcome(self, test_id: str) -> TestResult:
        """The outcome of `test_id`; `missing` when the report lacks it.

        An id without parameters covers every parametrized instance (`id[...]`): it passes only
        if there is at least one and all of them pass; otherwise the first non-pass is returned.
        """
        if test_id in self.tests:
            return self.tests[test_id]
        instances = [v for k, v in self.tests.items() if k.startswith(test_id + "[")]
        if not instances:
            return TestResult(MISSING, self.problem or "test not in the report")
        return next((v for v in instances if not v.passed), instances[0])

    def instances(self, test_id: str) -> dict[str, TestResult]:
        """The reported results `test_id` covers (itself, or its parametrized instances)."""
        if test_id in self.tests:
            return {test_id: self.tests[test_id]}
        return {k: v for k, v in self.tests.items() if k.startswith(test_id + "[")}

    def base_ids(self) -> set[str]:
        """Reported ids with parametrization stripped."""
        return {k.split("[", 1)[0] for k in self.tests}


class Gate:
    """Holds one runner after it has started and before any workspace code runs, until the host
    opens it by creating a file (a random name in the sandbox's OUT_DIR) through the sandbox's own
    `write_file`. Nothing in the sandbox can create it first: until it is open, only the runner
    runs there. `ready` is set when the runner waits at the gate, or when the run is over."""

    def __init__(self) -> None:
        self.rel = f"{OUT_DIR}/{secrets.token_hex(8)}"
        self.ready = threading.Event()
        self.reached = False  # the runner reported it waits at the gate
        self.opened_at: float | None = None
        self.cancelled = False

    def open(self, sandbox: Sandbox) -> None:
        """Let the runner go on (raises what the sandbox's write_file raises; the gate stays shut)."""
        self.opened_at = time.monotonic()  # before the write: the runner's time counts from here
        try:
            sandbox.write_file(self.rel, "")
        except BaseException:
            self.opened_at = None
            raise

    def cancel(self) -> None:
        """Stop a runner that was never let through (its sandbox's processes are killed)."""
        self.cancelled = True


class RunClock:
    """The host-side watch of one runner process: its report, and per-phase time limits from its
    progress markers, both read from the lines `\\x1e<marker> {json}` of its stdout.

    A line may be forged by the code under test; a forged marker only moves the clock (the run's
    overall deadline still holds), a forged report line is no more than the code could do to any
    report it can write (the verdict on held-out tests is reached on the host). Before a gate is
    opened no workspace code runs, so the markers up to it are the runner's own.
    """

    def __init__(self, marker: str, test_limit: float | None, overall: float, gate: Gate | None = None):
        self.prefix = MARK + marker.encode() + b" "
        self.test_limit = test_limit
        self.start = time.monotonic()
        self.overall = overall
        self.gate = gate
        self.hold = STARTUP_S + 2 * overall + HOLD_MARGIN_S  # the longest a gate may keep it waiting
        self.phase: dict = {"p": "boot"}
        self.since = self.start
        self.started = False
        self.records: list[dict] = []
        self.report_bytes = 0
        self.malformed = 0
        self.overflow = False  # the report passed MAX_REPORT: nothing after is kept
        self._buf = bytearray()  # the current line, while it may be one of the runner's
        self._skip = False  # inside a line that cannot be one of the runner's
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        """Take stdout bytes; progress markers move the clock, report lines are kept."""
        with self._lock:
            pos = 0
            while True:
                end = chunk.find(b"\n", pos)
                if not self._skip:
                    self._buf += chunk[pos:] if end < 0 else chunk[pos:end]
                    # Only a line that starts with the prefix is waited for, and only up to MAX_RECORD.
                    if len(self._buf) > MAX_RECORD or not self.prefix.startswith(self._buf[: len(self.prefix)]):
                        if self._buf.startswith(self.prefix):
                            self.malformed += 1
                        self._buf.clear()
                        self._skip = True
                if end < 0:
                    return
                if not self._skip and self._buf.startswith(self.prefix):
                    self._line(bytes(self._buf))
                self._buf.clear()
                self._skip = False
                pos = end + 1

    def _line(self, line: bytes) -> None:
        rec = records.parse(line[len(self.prefix):])
        if rec is None:
            self.malformed += 1
            return
        if "p" in rec:
            self.phase, self.since = rec, time.monotonic()
            self.started = self.started or rec["p"] == "start"
            if rec["p"] == "gate" and self.gate is not None and self.gate.opened_at is None and self.started:
                self.gate.reached = True
                self.gate.ready.set()
        elif not self.overflow:
            self.report_bytes += len(line)
            self.overflow = self.report_bytes > MAX_REPORT
            if not self.overflow:
                self.records.append(rec)

    def held(self) -> bool:
        """Whether the run waits for its gate (no workspace code has run)."""
        return self.gate is not None and self.gate.opened_at is None

    def code_may_run(self) -> bool:
        """Whether workspace code may have run: the runner started and nothing holds it."""
        return self.started and not self.held()

    def limit(self) -> float | None:
        """The time allowed in the current phase (None: only the overall deadline)."""
        p = self.phase.get("p")
        if p == "boot" or (self.held() and p == "start"):
            return STARTUP_S
        if self.held():
            return None  # at the gate: the host decides how long it waits
        if self.test_limit is None:
            return None
        if p == "collect":
            return max(self.test_limit * COLLECT_FACTOR, COLLECT_FLOOR_S)
        return self.test_limit

    def expired(self) -> bool:
        """Whether the current phase, or the whole run, is over its time (or the host cancelled it)."""
        now = time.monotonic()
        with self._lock:
            if self.gate is not None and self.gate.cancelled and self.gate.opened_at is None:
                return True
            lim = self.limit()
            if self.held():
                return now - self.start > self.hold or (lim is not None and now - self.since > lim)
            # Once let through, the run's time counts from the gate's opening.
            base = self.gate.opened_at if self.gate is not None else self.start
            since = max(self.since, base)
            return now - base > self.overall or (lim is not None and now - since > lim)

    def clean(self, text: str) -> str:
        """`text` without the progress markers (each is written as its own line, newline first)."""
        mark = re.escape(self.prefix.decode(errors="replace"))
        return re.sub(f"\n?{mark}[^\n]*\n?", "", text).strip("\n")


def module_names(paths: list[str]) -> list[str]:
    """Importable module names of repo-relative .py paths (see rules.module_names)."""
    return rules.module_names(paths)


def pytest_args(ini: str, test_paths: list[str], deselect: list[str]) -> list[str]:
    """The pytest command line of one runner process."""
    # A test file that fails to collect must not stop the others (nor the honeypot) from running.
    args = ["-q", "--tb=short", "-p", "no:cacheprovider", "--rootdir=.", "--confcutdir=.", "-c", ini,
            "--import-mode=append", "--continue-on-collection-errors", *test_paths]
    for test_id in deselect:
        args += ["--deselect", test_id]
    return args


def run_tests(
    sandbox: Sandbox,
    test_paths: list[str],
    import_modules: list[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    *,
    mode: str = "visible",
    shadow_check: list[str] = (),
    test_time_limit: float | None = None,
    max_reruns: int = MAX_RERUNS,
    gate: Gate | None = None,
) -> TestRun:
    """Run pytest on `test_paths` in `sandbox` (after importing `import_modules`); never raises.

    `mode` is the runner's (visible | observe); `shadow_check` the top-level names to refuse if
    importable from elsewhere; `test_time_limit` the per-test limit enforced from the host
    (None: only `timeout`, which bounds the whole run, counted from the gate's opening when
    there is a `gate`). The runner writes no file: the workspace is left as it was.
    """
    run = TestRun()
    clocks: list[RunClock] = []
    try:
        _run_all(sandbox, run, list(test_paths), list(import_modules), float(timeout), mode, list(shadow_check),
                 test_time_limit, max_reruns, gate, clocks)
    except Exception as e:  # noqa: BLE001 - a run never raises; where it failed decides what it was
        why = f"sandbox failure: {e}" if isinstance(e, SandboxError) else f"test run failed: {type(e).__name__}: {e}"
        if run.code_ran or any(c.code_may_run() for c in clocks):
            run.code_ran, run.fault = True, why
        else:
            run.error = why
    finally:
        if gate is not None:
            gate.ready.set()
    _check_form(run)
    return run


def _check_form(run: TestRun) -> None:
    """A report out of its form (malformed lines with the runner's prefix, a second start, records
    after the end) was written by the code under test: the run is not trusted, a fault."""
    why = ([f"{run.malformed} malformed lines"] if run.malformed else []) + run.forged
    if why and run.code_ran and run.error is None and run.fault is None:
        run.fault = "the test report was forged or torn: " + "; ".join(why[:3])


def _run_all(sandbox: Sandbox, run: TestRun, paths: list[str], modules: list[str], timeout: float, mode: str,
             shadow: list[str], limit: float | None, max_reruns: int, gate: Gate | None,
             clocks: list[RunClock]) -> None:
    start = time.monotonic()
    deselect: list[str] = []
    for attempt in range(max_reruns + 1):
        run.reruns = attempt
        held = gate if attempt == 0 else None
        if held is not None:
            budget = STARTUP_S + 3 * timeout + HOLD_MARGIN_S  # the backend's backstop; the clock is the limit
        else:
            budget = _since(gate, start) + timeout - time.monotonic()
            if budget <= 1:
                run.fault = f"test run timed out after {timeout:g}s"
                return
        clock = RunClock(secrets.token_hex(8), limit, timeout, held)
        clocks.append(clock)
        _one(sandbox, run, clock, paths, modules if attempt == 0 else [], budget, mode,
             shadow if attempt == 0 else [], deselect, held)
        if held is not None and held.opened_at is None and not (run.finished or run.shadowed):
            # Never let through: no workspace code ran, so whatever ended the run is not the submission's.
            run.error = run.error or ("stopped by the grader before any workspace code ran" if held.cancelled
                                      else "the test runner ended before it was let through")
            return
        if clock.overflow:
            run.finished = False  # whatever came after the cap (an `end` too) was never read
            run.fault = f"the test report passed {MAX_REPORT >> 20} MiB; the rest was not read"
            return
        if run.error or run.finished or run.shadowed:
            return
        ex = run.exec
        phase = clock.phase.get("p")
        if ex is not None and ex.stopped and phase == "test" and isinstance(clock.phase.get("id"), str):
            test_id = clock.phase["id"]
            run.timed_out_tests.append(test_id)
            run.tests[test_id] = TestResult("failed", TIME_LIMIT_MSG.format(limit or timeout))
            deselect = sorted(set(deselect) | set(run.tests))
            if attempt < max_reruns and time.monotonic() < _since(gate, start) + timeout - 1:
                continue
            run.fault = f"{len(run.timed_out_tests)} tests exceeded the per-test time limit of {limit:g}s"
            return
        if ex is not None and ex.stopped and phase == "import":
            mod = str(clock.phase.get("m"))
            run.import_errors[mod] = f"importing {mod} " + TIME_LIMIT_MSG.format(limit or timeout)
            run.fault = f"importing {mod} exceeded the time limit"
            return
        if ex is not None and ex.stopped and phase == "collect":
            run.fault = "collecting the tests exceeded the time limit (stopped from outside the sandbox)"
            return
        if ex is not None and ex.timed_out:
            run.fault = f"test run timed out after {timeout:g}s"
            return
        code = ex.exit_code if ex is not None else None
        run.fault = f"the test process ended before finishing (exit {code})"
        return


def _since(gate: Gate | None, start: float) -> float:
    """When a run's time started counting: at its gate's opening, else at its start."""
    return gate.opened_at if gate is not None and gate.opened_at is not None else start


def _one(sandbox: Sandbox, run: TestRun, clock: RunClock, paths: list[str], modules: list[str], timeout: float,
         mode: str, shadow: list[str], deselect: list[str], gate: Gate | None) -> None:
    """One runner process: start it under `clock`, then merge its report into `run`."""
    cfg = {"mode": mode, "modules": modules, "shadow_check": shadow, "marker": clock.prefix[1:-1].decode(),
           "pytest": pytest_args(NO_CONFIG, paths, deselect), "gate": gate.rel if gate is not None else None}
    argv = ["python3", "-I", "-B", "-c", runner_source(), json.dumps(cfg)]
    ex = sandbox.exec(argv, timeout=timeout, watch=clock)
    run.exec = ex
    run.malformed += clock.malformed
    run.output = (clock.clean(ex.stdout) + "\n" + ex.stderr).strip()[-8000:]
    ran_before = run.code_ran
    run.code_ran = run.code_ran or clock.code_may_run()
    if _merge(run, clock.records):
        return
    if ran_before:
        # Workspace code ran in an earlier attempt: a runner that does not come back is its doing.
        run.fault = "the test runner did not start again after a test was stopped"
    else:
        why = "did not start within its time" if ex.stopped else f"exited {ex.exit_code} before starting"
        tail = (ex.stderr.strip().splitlines() or [""])[-1][:300]
        run.error = f"the test runner {why}" + (f": {tail}" if tail else "")


def _merge(run: TestRun, recs: list[dict]) -> bool:
    """Add one report's checked records (sdebench.grading.records) to `run`, up to its first
    `end` (nothing after the end is part of the report; what breaks the report's form is noted in
    `run.forged`); whether the runner started."""
    started = ended = False
    for rec in recs:
        kind = rec["k"]
        if ended:
            run.forged.append(f"a {kind} record after the end")
            break
        if kind == "start":
            if started:
                run.forged.append("a second start")
            run.started = started = True
        elif not started:
            run.forged.append(f"a {kind} record before the start")
        elif kind == "test":
            obs = rec["obs"]
            run.tests[rec["id"]] = TestResult(rec["outcome"], rec["message"], rec["duration"],
                                              tuple(obs) if obs is not None else None)
        elif kind == "import":
            run.import_errors[rec["module"]] = rec["error"]
        elif kind == "collect":
            run.collect_errors.append({"nodeid": rec["id"], "message": rec["message"]})
        elif kind == "shadow":
            run.shadowed[rec["name"]] = rec["where"]
        elif kind == "tamper":
            run.tampered = (run.tampered + rec["what"])[:20]
        elif kind == "crash":
            run.fault = f"pytest crashed: {rec['message'][-300:]}"
        elif kind == "end":
            run.finished = ended = True
            run.exit = rec["exit"]
    return started
