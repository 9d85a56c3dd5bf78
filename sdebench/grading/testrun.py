"""Run pytest inside a sandbox through the runner (`_runner.py`) and read what it reported.

The runner is passed as source text to `python3 -I -B -c`, so neither the environment nor files
in the workspace can change how it starts. Its report, read from the command's output stream as
it arrives (one exec per run, no file fetched after it), is the only source of outcomes: a test
missing from it did not pass. The host supervises the run from outside through the runner's
progress markers on the same stream: a test that exceeds the per-test time limit is stopped by
killing the whole sandboxed process tree (no signal the code could block or ignore), recorded as
failed, and the remaining tests run again without it, a bounded number of times.

A run ends in one of three ways: finished (the report's `end` line is there); a `fault` of the
code under test (time limits, a crash or exit after the runner started); or an infrastructure
`error` (the runner never started: no interpreter, no pytest, a sandbox failure). Only the last
is an error of the episode; a fault is an outcome of the submission.
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

from sdebench.grading import rules
from sdebench.sandbox.base import ExecResult, Sandbox, SandboxError

PASSED = rules.PASSED
MISSING = rules.MISSING
DEFAULT_TIMEOUT = 120.0
# The runner's pytest configuration: none at all (`-c /dev/null`), so the repo's pytest.ini,
# tox.ini, setup.cfg or pyproject.toml cannot add options.
NO_CONFIG = "/dev/null"
MAX_RERUNS = 3  # runs restarted after a test hit the per-test limit
STARTUP_S = 60.0  # the interpreter and pytest must start within this (no workspace code runs yet)
COLLECT_FACTOR, COLLECT_FLOOR_S = 3.0, 15.0  # collection imports every test module at once
MARK = b"\x1e"
MAX_RECORD = 4 << 20  # bytes of one report line (a test's observations are capped at 256 KiB)
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
    error: str | None = None  # infrastructure: no usable report (see the module docstring)
    fault: str | None = None  # the code under test ended the run abnormally
    timed_out_tests: list[str] = field(default_factory=list)
    reruns: int = 0
    output: str = ""  # the runner's stdout and stderr, progress markers removed (capped)
    exec: ExecResult | None = None

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


class RunClock:
    """The host-side watch of one runner process: its report, and per-phase time limits from its
    progress markers, both read from the lines `\\x1e<marker> {json}` of its stdout.

    A line may be forged by the code under test; a forged marker only moves the clock (the run's
    overall deadline still holds), a forged report line is no more than the code could do to any
    report it can write (the verdict on held-out tests is reached on the host).
    """

    def __init__(self, marker: str, test_limit: float | None, overall: float):
        self.prefix = MARK + marker.encode() + b" "
        self.test_limit = test_limit
        self.start = time.monotonic()
        self.overall = overall
        self.phase: dict = {"p": "boot"}
        self.since = self.start
        self.started = False
        self.records: list[dict] = []
        self.report_bytes = 0
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
        try:
            rec = json.loads(line[len(self.prefix):])
        except ValueError:
            return
        if not isinstance(rec, dict):
            return
        if "p" in rec:
            self.phase, self.since = rec, time.monotonic()
            self.started = self.started or rec.get("p") == "start"
        elif "k" in rec and not self.overflow:
            self.report_bytes += len(line)
            self.overflow = self.report_bytes > MAX_REPORT
            if not self.overflow:
                self.records.append(rec)

    def limit(self) -> float | None:
        """The time allowed in the current phase (None: only the overall deadline)."""
        p = self.phase.get("p")
        if p == "boot":
            return STARTUP_S
        if self.test_limit is None:
            return None
        if p == "collect":
            return max(self.test_limit * COLLECT_FACTOR, COLLECT_FLOOR_S)
        return self.test_limit

    def expired(self) -> bool:
        """Whether the current phase, or the whole run, is over its time."""
        now = time.monotonic()
        with self._lock:
            lim = self.limit()
            return now - self.start > self.overall or (lim is not None and now - self.since > lim)

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
) -> TestRun:
    """Run pytest on `test_paths` in `sandbox` (after importing `import_modules`); never raises.

    `mode` is the runner's (visible | observe); `shadow_check` the top-level names to refuse if
    importable from elsewhere; `test_time_limit` the per-test limit enforced from the host
    (None: only `timeout`, which bounds the whole call). The runner writes no file: the
    workspace is left as it was.
    """
    run = TestRun()
    try:
        _run_all(sandbox, run, list(test_paths), list(import_modules), float(timeout), mode, list(shadow_check),
                 test_time_limit, max_reruns)
    except SandboxError as e:
        run.error = f"sandbox failure: {e}"
    except Exception as e:  # noqa: BLE001 - a run never raises; the reason is kept
        run.error = f"test run failed: {type(e).__name__}: {e}"
    return run


def _run_all(sandbox: Sandbox, run: TestRun, paths: list[str], modules: list[str], timeout: float, mode: str,
             shadow: list[str], limit: float | None, max_reruns: int) -> None:
    deadline = time.monotonic() + timeout
    deselect: list[str] = []
    for attempt in range(max_reruns + 1):
        run.reruns = attempt
        remaining = deadline - time.monotonic()
        if remaining <= 1:
            run.fault = f"test run timed out after {timeout:g}s"
            return
        clock = _one(sandbox, run, paths, modules if attempt == 0 else [], remaining, mode,
                     shadow if attempt == 0 else [], limit, deselect)
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
            if attempt < max_reruns and time.monotonic() < deadline - 1:
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


def _one(sandbox: Sandbox, run: TestRun, paths: list[str], modules: list[str], timeout: float, mode: str,
         shadow: list[str], limit: float | None, deselect: list[str]) -> RunClock:
    """One runner process: start it under a clock, then merge its report into `run`."""
    nonce = secrets.token_hex(8)
    cfg = {"mode": mode, "modules": modules, "shadow_check": shadow, "marker": nonce,
           "pytest": pytest_args(NO_CONFIG, paths, deselect)}
    argv = ["python3", "-I", "-B", "-c", runner_source(), json.dumps(cfg)]
    clock = RunClock(nonce, limit, timeout)
    ex = sandbox.exec(argv, timeout=timeout, watch=clock)
    run.exec = ex
    run.output = (clock.clean(ex.stdout) + "\n" + ex.stderr).strip()[-8000:]
    if not _merge(run, clock.records):
        why = "did not start within its time" if ex.stopped else f"exited {ex.exit_code} before starting"
        tail = (ex.stderr.strip().splitlines() or [""])[-1][:300]
        run.error = f"the test runner {why}" + (f": {tail}" if tail else "")
    return clock


def _merge(run: TestRun, records: list[dict]) -> bool:
    """Add one report's records to `run` (malformed ones are ignored); whether the runner started."""
    started = False
    for rec in records:
        kind = rec.get("k")
        try:
            if kind == "start":
                run.started = started = True
            elif kind == "test":
                obs = rec.get("obs")
                run.tests[str(rec["id"])] = TestResult(
                    str(rec["outcome"]), str(rec.get("message", "")), float(rec.get("duration", 0.0) or 0.0),
                    tuple(obs) if isinstance(obs, list) else None)
            elif kind == "import":
                run.import_errors[str(rec["module"])] = str(rec.get("error", ""))
            elif kind == "collect":
                run.collect_errors.append({"nodeid": str(rec.get("id", "")), "message": str(rec.get("message", ""))})
            elif kind == "shadow":
                run.shadowed[str(rec["name"])] = str(rec.get("where", ""))
            elif kind == "tamper":
                run.tampered += [str(w) for w in rec.get("what", [])][:20]
            elif kind == "crash":
                run.fault = f"pytest crashed: {str(rec.get('message', ''))[-300:]}"
            elif kind == "end":
                run.finished = True
                run.exit = rec.get("exit") if isinstance(rec.get("exit"), int) else None
        except (KeyError, TypeError, ValueError):
            continue
    return started
