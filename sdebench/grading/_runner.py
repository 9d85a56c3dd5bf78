"""Test runner executed inside a sandbox as `python3 -E -s -B -c <this source> REPORT MODULES -- PYTEST_ARGS`.

Self-contained (stdlib + pytest only): it is passed as source text, so it needs no file in the
workspace and nothing of sdebench inside the sandbox. It imports the changed modules (the import
guard), runs pytest with an in-memory report plugin, and writes one JSON report: per-test
outcomes keyed by node id, the import errors, and pytest's exit status.
"""

import json
import os
import sys
import traceback

MAX_MESSAGE = 2000


def _main(argv):
    result_path = argv[0]
    sep = argv.index("--")
    modules = [m for m in argv[1:sep] if m]
    pytest_args = argv[sep + 1 :]
    # pytest is imported before the workspace joins sys.path: a `pytest.py` or `_pytest/` placed
    # in the workspace cannot stand in for the framework.
    import pytest

    sys.path.insert(0, os.getcwd())
    result = {"import_errors": {}, "tests": {}, "collect_errors": [], "exit": None, "finished": False}

    for mod in modules:
        try:
            __import__(mod)
        except BaseException as e:  # noqa: BLE001 - SystemExit at import is a failed import too
            result["import_errors"][mod] = "".join(traceback.format_exception_only(type(e), e)).strip()[:MAX_MESSAGE]

    tests = result["tests"]

    class Report:
        """Collects one outcome per test: setup/teardown failures are errors, xfail is kept apart."""

        def pytest_runtest_logreport(self, report):
            outcome = None
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif report.when == "call":
                outcome = report.outcome
            elif report.failed:
                outcome = "error"
            elif report.skipped:
                outcome = "skipped"
            if outcome is None:
                return
            prev = tests.get(report.nodeid, {}).get("outcome")
            if prev in ("failed", "error") and report.when == "teardown":
                return
            message = "" if outcome == "passed" or report.longrepr is None else str(report.longrepr)[-MAX_MESSAGE:]
            tests[report.nodeid] = {"outcome": outcome, "message": message}

        def pytest_collectreport(self, report):
            if report.failed:
                result["collect_errors"].append({"nodeid": report.nodeid, "message": str(report.longrepr)[-MAX_MESSAGE:]})

    try:
        result["exit"] = int(pytest.main(pytest_args, plugins=[Report()]))
        result["finished"] = True
    except BaseException as e:  # noqa: BLE001 - record and still write the report
        result["exit"] = -1
        result["crash"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:MAX_MESSAGE]
    data = json.dumps(result).encode()
    fd = os.open(result_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    sys.stdout.flush()
    os._exit(0)


_main(sys.argv[1:])
