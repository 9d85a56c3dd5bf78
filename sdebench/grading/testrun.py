"""Run pytest inside a sandbox and read per-test outcomes from a structured report.

The runner (`_runner.py`) is passed as source text to `python3 -E -s -B -c`, so neither the
environment (PYTHONPATH, PYTHONSTARTUP) nor files in the workspace can change how it starts. Its
JSON report is the only source of outcomes: a test missing from it did not pass.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from sdebench.sandbox.base import OUT_DIR, ExecResult, Sandbox

PASSED = "passed"
MISSING = "missing"
DEFAULT_TIMEOUT = 120.0
INI_TEXT = "[pytest]\naddopts =\n"


@cache
def runner_source() -> str:
    """The source text of the in-sandbox runner."""
    return Path(__file__).with_name("_runner.py").read_text()


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test id, with its failure text."""

    outcome: str  # passed | failed | error | skipped | xfailed | xpassed | missing
    message: str = ""

    @property
    def passed(self) -> bool:
        """Only a plain pass counts."""
        return self.outcome == PASSED


@dataclass
class TestRun:
    """Everything one pytest run in a sandbox reported."""

    tests: dict[str, TestResult] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)
    collect_errors: list[dict] = field(default_factory=list)
    finished: bool = False
    exit: int | None = None
    error: str | None = None  # why the run produced no usable report
    exec: ExecResult | None = None

    def outcome(self, test_id: str) -> TestResult:
        """The outcome of `test_id`; `missing` when the report lacks it.

        An id without parameters covers every parametrized instance (`id[...]`): it passes only
        if there is at least one and all of them pass; otherwise the first non-pass is returned.
        """
        if test_id in self.tests:
            return self.tests[test_id]
        instances = [v for k, v in self.tests.items() if k.startswith(test_id + "[")]
        if not instances:
            return TestResult(MISSING, self.error or "test not in the report")
        return next((v for v in instances if not v.passed), instances[0])

    def base_ids(self) -> set[str]:
        """Reported ids with parametrization stripped."""
        return {k.split("[", 1)[0] for k in self.tests}


def module_names(paths: list[str]) -> list[str]:
    """Importable module names of repo-relative .py paths (package __init__ gives the package)."""
    out = []
    for p in paths:
        if not p.endswith(".py"):
            continue
        parts = p[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            out.append(".".join(parts))
    return out


def run_tests(
    sandbox: Sandbox,
    test_paths: list[str],
    import_modules: list[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    cleanup: bool = True,
) -> TestRun:
    """Run pytest on `test_paths` in `sandbox` (after importing `import_modules`); never raises.

    The runner's ini and report live in OUT_DIR of the workspace; `cleanup` removes them after.
    """
    nonce = secrets.token_hex(8)
    report_rel = f"{OUT_DIR}/report-{nonce}.json"
    ini_rel = f"{OUT_DIR}/pytest-{nonce}.ini"
    run = TestRun()
    try:
        _run(sandbox, run, report_rel, ini_rel, test_paths, import_modules, timeout)
    except Exception as e:  # noqa: BLE001 - a run never raises; the reason is kept
        run.error = f"test run failed: {type(e).__name__}: {e}"
    if cleanup:
        # Leftovers would be harmless (the grader strips OUT_DIR); a failure here is ignored.
        with contextlib.suppress(Exception):
            sandbox.exec(["rm", "-rf", "--", OUT_DIR], timeout=30)
    return run


def _run(sandbox: Sandbox, run: TestRun, report_rel: str, ini_rel: str, test_paths: list[str],
         import_modules: list[str], timeout: float) -> None:
    sandbox.write_file(ini_rel, INI_TEXT)
    argv = ["python3", "-E", "-s", "-B", "-c", runner_source(), report_rel, *import_modules, "--"]
    argv += ["-q", "--tb=short", "-p", "no:cacheprovider", "--rootdir=.", "--confcutdir=.", "-c", ini_rel, *test_paths]
    run.exec = sandbox.exec(argv, timeout=timeout)
    if run.exec.timed_out:
        run.error = f"test run timed out after {timeout:g}s"
        return
    try:
        raw = sandbox.read_file(report_rel)
    except (OSError, FileNotFoundError, KeyError, RuntimeError):
        run.error = f"no test report: the test process died before writing it (exit {run.exec.exit_code})"
        return
    try:
        data = json.loads(raw)
        run.tests = {k: TestResult(str(v["outcome"]), str(v.get("message", ""))) for k, v in data["tests"].items()}
        run.import_errors = dict(data.get("import_errors", {}))
        run.collect_errors = list(data.get("collect_errors", []))
        run.finished = bool(data.get("finished"))
        run.exit = data.get("exit")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        run.tests = {}
        run.error = f"unreadable test report: {e}"
    if not run.finished and run.error is None:
        run.error = "pytest did not finish"
