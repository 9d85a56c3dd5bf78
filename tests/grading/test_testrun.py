"""The runner seen from the host: per-test limits enforced from outside, reruns, faults vs errors."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from sdebench.grading.testrun import TIME_LIMIT_MSG, RunClock, run_tests
from sdebench.sandbox import make_factory
from tests.sandbox.conftest import docker_image  # noqa: F401 - fixture

SPIN = '''import signal


def test_before():
    assert 1 + 1 == 2


def test_spins_with_every_signal_blocked():
    for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGVTALRM, signal.SIGPROF):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
    while True:
        pass


def test_after():
    assert "still runs"
'''


def _ws(tmp_path: Path, files: dict[str, str]) -> Path:
    ws = tmp_path / "repo"
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


BACKENDS = [pytest.param("unsafe_local"),
            pytest.param("local", marks=[pytest.mark.bwrap,
                                         pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap")])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_test_that_blocks_every_signal_costs_the_limit_and_the_rest_still_runs(backend, tmp_path):
    ws = _ws(tmp_path, {"tests/test_spin.py": SPIN})
    start = time.monotonic()
    with make_factory({"backend": backend}).open(ws) as sb:
        run = run_tests(sb, ["tests/test_spin.py"], timeout=120, test_time_limit=2.0)
    took = time.monotonic() - start
    assert run.error is None and run.fault is None, (run.error, run.fault, run.output)
    assert run.outcome("tests/test_spin.py::test_before").passed
    assert run.outcome("tests/test_spin.py::test_after").passed
    spun = run.outcome("tests/test_spin.py::test_spins_with_every_signal_blocked")
    assert spun.outcome == "failed" and spun.message == TIME_LIMIT_MSG.format(2.0)
    assert run.timed_out_tests == ["tests/test_spin.py::test_spins_with_every_signal_blocked"] and run.reruns == 1
    assert took < 30, took


@pytest.mark.docker
def test_the_limit_holds_on_docker(request, tmp_path):
    image = request.getfixturevalue("docker_image")
    factory = make_factory({"backend": "docker", "image": image, "prestart": 0})
    try:
        with factory.open(_ws(tmp_path, {"tests/test_spin.py": SPIN})) as sb:
            run = run_tests(sb, ["tests/test_spin.py"], timeout=120, test_time_limit=2.0)
    finally:
        factory.cleanup()
    assert run.error is None and run.fault is None, (run.error, run.output)
    assert run.outcome("tests/test_spin.py::test_after").passed
    assert run.timed_out_tests == ["tests/test_spin.py::test_spins_with_every_signal_blocked"]


def test_too_many_spinning_tests_end_as_a_fault_not_an_error(tmp_path):
    many = "\n\n".join(f"def test_spin_{i}():\n    while True:\n        pass" for i in range(6)) + "\n"
    ws = _ws(tmp_path, {"tests/test_many.py": many})
    with make_factory({"backend": "unsafe_local"}).open(ws) as sb:
        run = run_tests(sb, ["tests/test_many.py"], timeout=120, test_time_limit=1.0, max_reruns=2)
    assert run.error is None and "exceeded the per-test time limit" in run.fault
    assert len(run.timed_out_tests) == 3
    assert run.outcome("tests/test_many.py::test_spin_5").outcome == "missing"


def test_a_runner_that_cannot_start_is_an_infrastructure_error(tmp_path):
    class NoPython:
        """A sandbox whose python3 is missing (as a venv hidden by a fresh /tmp would be)."""

        def __init__(self, inner):
            self.inner, self.workdir = inner, inner.workdir

        def exec(self, cmd, timeout=60.0, env=None, watch=None):
            if isinstance(cmd, list) and cmd[0] == "python3":
                cmd = ["bash", "-c", 'exec "$0" "$@"', "/nonexistent/bin/python3", *cmd[1:]]
            return self.inner.exec(cmd, timeout=timeout, env=env, watch=watch)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    ws = _ws(tmp_path, {"tests/test_ok.py": "def test_ok():\n    assert True\n"})
    with make_factory({"backend": "unsafe_local"}).open(ws) as sb:
        run = run_tests(NoPython(sb), ["tests/test_ok.py"], timeout=30)
    assert run.error and "before starting" in run.error and run.fault is None


def test_code_ending_the_process_is_a_fault(tmp_path):
    ws = _ws(tmp_path, {"pkg/__init__.py": "import os\nos._exit(3)\n", "tests/test_ok.py": "import pkg\n\n\ndef test_ok():\n    pass\n"})
    with make_factory({"backend": "unsafe_local"}).open(ws) as sb:
        run = run_tests(sb, ["tests/test_ok.py"], ["pkg"], timeout=30)
    assert run.error is None and run.started and "ended before finishing (exit 3)" in run.fault


def test_forged_markers_only_move_the_clock_within_the_overall_deadline():
    clock = RunClock("abc", test_limit=0.05, overall=0.3)
    clock.feed(b'\n\x1eabc {"p": "start"}\n')
    assert clock.started and not clock.expired()
    time.sleep(0.1)
    assert clock.expired()  # the current phase is over its limit
    for _ in range(8):
        clock.feed(b'\n\x1eabc {"p": "test", "id": "forged"}\n')
        time.sleep(0.04)
    assert clock.expired()  # past the overall deadline whatever the markers say


def _feed_bytewise(clock: RunClock, data: bytes) -> None:
    for i in range(len(data)):
        clock.feed(data[i:i + 1])


def test_the_report_is_read_from_the_stream_only_from_the_runners_own_lines():
    clock = RunClock("abc", test_limit=None, overall=60)
    _feed_bytewise(clock, b'noise\n\x1eabc {"k": "start"}\n\x1eabc {"p": "test", "id": "t::a"}\n')
    # A marker in the middle of a line is not one of the runner's lines, however long the line.
    clock.feed(b'printed without a newline \x1eabc {"k": "end", "exit": 0}\n')
    clock.feed(b"y" * 100 + b'\x1eabc {"k": "end", "exit": 0}')
    clock.feed(b'\x1eabc {"k": "end", "exit": 0}\n')
    clock.feed(b'\n\x1eabc {"k": "test", "id": "t::a", "outcome": "passed"}\n\x1eother {"k": "end"}\n[1, 2]\n')
    assert clock.records == [{"k": "start"}, {"k": "test", "id": "t::a", "outcome": "passed", "message": "",
                                              "duration": 0.0, "obs": None}]
    assert clock.phase == {"p": "test", "id": "t::a"}


def test_an_oversized_line_or_report_is_dropped_and_the_run_never_ends():
    from sdebench.grading import testrun

    clock = RunClock("abc", test_limit=None, overall=60)
    big = b'\n\x1eabc {"k": "test", "id": "t::big", "message": "' + b"m" * testrun.MAX_RECORD + b'"}\n'
    clock.feed(big[:1 << 20])
    clock.feed(big[1 << 20:])
    clock.feed(b'\x1eabc {"k": "start"}\n')
    assert clock.records == [{"k": "start"}]
    line = b'\n\x1eabc {"k": "test", "id": "t::x", "outcome": "passed", "message": "' + b"m" * (1 << 20) + b'"}\n'
    for _ in range(testrun.MAX_REPORT // len(line) + 2):
        clock.feed(line)
    clock.feed(b'\n\x1eabc {"k": "end", "exit": 0}\n')
    assert clock.overflow
    assert {"k": "end", "exit": 0} not in clock.records  # past the cap: unfinished, so not resolved


def test_every_report_line_but_a_tests_fits_one_atomic_pipe_write():
    from sdebench.grading import _runner

    overhead = len("\n\x1e0123456789abcdef ") + 1
    records = [
        {"k": "import", "module": "pkg." + "m" * 300, "error": "é" * 5000},
        {"k": "tamper", "what": ["builtins." + "ü" * 300 + str(i) for i in range(500)]},
        {"k": "shadow", "name": "n" * 255, "where": "/" + "w" * 4096},
        {"k": "collect", "id": "tests/" + "t" * 400, "message": "\x00" * 3000},
        {"k": "crash", "message": "c" * 100_000},
    ]
    for rec in records:
        fitted = _runner._fit(rec, overhead)
        assert len(json.dumps(fitted)) + overhead <= _runner.ATOMIC_LINE, rec["k"]
        assert fitted["k"] == rec["k"] and set(fitted) == set(rec)


def test_hostile_lines_are_counted_and_dropped_never_raised():
    from tests.grading.test_records import HOSTILE

    clock = RunClock("abc", test_limit=None, overall=60)
    clock.feed(b'\n\x1eabc {"k": "start"}\n')
    for payload in HOSTILE.values():
        clock.feed(b"\n\x1eabc " + payload + b"\n")
    clock.feed(b'\n\x1eabc {"k": "end", "exit": 0}\n')
    assert [r["k"] for r in clock.records] == ["start", "end"]
    assert clock.malformed == len(HOSTILE)
    assert not clock.expired()


def test_the_report_ends_at_its_first_end():
    from sdebench.grading.testrun import TestRun, _merge

    run = TestRun()
    recs = [{"k": "start"}, {"k": "end", "exit": 0},
            {"k": "test", "id": "t::late", "outcome": "passed", "message": "", "duration": 0.0, "obs": None}]
    assert _merge(run, recs) and run.finished and run.exit == 0 and "t::late" not in run.tests
    assert run.forged == ["a test record after the end"]
    again = TestRun()
    _merge(again, [{"k": "start"}, {"k": "start"}, {"k": "end", "exit": 0}])
    assert again.forged == ["a second start"]


def test_a_gated_clock_waits_for_the_host_and_counts_from_the_opening():
    from sdebench.grading.testrun import Gate

    gate = Gate()
    clock = RunClock("abc", test_limit=0.05, overall=0.3, gate=gate)
    clock.feed(b'\n\x1eabc {"p": "start"}\n\x1eabc {"p": "gate"}\n')
    assert gate.reached and gate.ready.is_set() and clock.held() and not clock.code_may_run()
    time.sleep(0.4)  # past the overall deadline and the test limit: no matter, nothing runs while held
    assert not clock.expired()

    class Box:
        written: list[str] = []

        def write_file(self, rel, content):
            self.written.append(rel)

    box = Box()
    gate.open(box)
    assert box.written == [gate.rel] and gate.rel.startswith(".sdebench-out/")
    assert clock.code_may_run() and not clock.expired()
    time.sleep(0.1)
    assert clock.expired()  # the per-test limit counts from the opening
    # A marker forged once workspace code runs does not hold the clock again.
    clock.feed(b'\n\x1eabc {"p": "gate"}\n')
    assert clock.limit() == 0.05
    cancelled = Gate()
    waiting = RunClock("abc", test_limit=None, overall=60, gate=cancelled)
    waiting.feed(b'\n\x1eabc {"p": "start"}\n\x1eabc {"p": "gate"}\n')
    assert not waiting.expired()
    cancelled.cancel()
    assert waiting.expired()


def test_a_gate_marker_before_the_start_is_not_the_runners():
    from sdebench.grading.testrun import Gate

    gate = Gate()
    clock = RunClock("abc", test_limit=None, overall=60, gate=gate)
    clock.feed(b'\n\x1eabc {"p": "gate"}\n')
    assert not gate.reached


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gated_run_runs_no_workspace_code_until_opened(backend, tmp_path):
    import threading

    from sdebench.grading.testrun import Gate

    # The package records when it was first imported; the host writes when it opened the gate.
    ws = _ws(tmp_path, {"pkg/__init__.py": "import time\nSTARTED = time.time()\n",
                        "tests/test_t.py": "import pkg\n\n\ndef test_t():\n"
                                           "    assert pkg.STARTED >= float(open('.sdebench-out/opened').read())\n"})
    gate = Gate()
    with make_factory({"backend": backend}).open(ws, read_only=True) as sb:
        box: list = []
        t = threading.Thread(target=lambda: box.append(run_tests(sb, ["tests/test_t.py"], ["pkg"], timeout=60,
                                                                 gate=gate)))
        t.start()
        assert gate.ready.wait(60) and gate.reached
        time.sleep(0.5)
        sb.write_file(".sdebench-out/opened", repr(time.time()))
        gate.open(sb)
        t.join(60)
    run = box[0]
    assert run.error is None and run.fault is None and run.code_ran, (run.error, run.fault, run.output)
    assert run.outcome("tests/test_t.py::test_t").passed


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cancelled_gate_is_an_error_not_a_fault(backend, tmp_path):
    from sdebench.grading.testrun import Gate

    ws = _ws(tmp_path, {"tests/test_t.py": "def test_t():\n    pass\n"})
    gate = Gate()
    gate.cancel()
    with make_factory({"backend": backend}).open(ws, read_only=True) as sb:
        run = run_tests(sb, ["tests/test_t.py"], timeout=60, gate=gate)
    assert run.error and run.fault is None and not run.code_ran


@pytest.mark.parametrize("backend", BACKENDS)
def test_lines_that_break_the_reports_form_are_a_fault_not_an_error(backend, tmp_path):
    # The package writes, with the runner's marker, a line nested too deep and a second start.
    pkg = ('import json, os, sys\n_m = b"\\n\\x1e" + json.loads(sys.argv[1])["marker"].encode() + b" "\n'
           'os.write(1, _m + b"[" * 50000 + b"]" * 50000 + b"\\n")\nos.write(1, _m + b\'{"k": "start"}\\n\')\n')
    ws = _ws(tmp_path, {"pkg/__init__.py": pkg, "tests/test_ok.py": "import pkg\n\n\ndef test_ok():\n    pass\n"})
    with make_factory({"backend": backend}).open(ws) as sb:
        run = run_tests(sb, ["tests/test_ok.py"], ["pkg"], timeout=60)
    assert run.error is None and run.outcome("tests/test_ok.py::test_ok").passed
    assert run.fault == "the test report was forged or torn: 1 malformed lines; a second start"
