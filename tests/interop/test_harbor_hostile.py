"""Hostile submissions against the exported verifier (Harbor's tests/verify.py, also SWE-bench's eval.sh),
run for real on the host as root: a process left running that reads tests/, a detached fork that
outlives its phase, report lines forged around the runner's end, a verifier that cannot demote or
cannot remove its key. Each scores 0 or is contained, and the attacks are real: run outside the
verifier (a plain import, a naive reading of the report) they do what they are built to do.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from sdebench.interop import harbor
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from tests.interop import verifier_run

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bwrap") is None,
                                reason="the verifier's users need root here (and bubblewrap to reach the interpreter)")
TASK = "billing-rounding-v0-K"
PACKAGE = "invoicer"


@pytest.fixture(scope="module")
def exported(tasks_dir, tmp_path_factory) -> Path:
    return harbor.export_task(load(tasks_dir / TASK), tmp_path_factory.mktemp("harbor"),
                              make_factory({"backend": "unsafe_local"}))


@pytest.fixture
def drop():
    """A dir every user may write to, where an attack leaves what it got (and its pids)."""
    d = Path(tempfile.mkdtemp(prefix="sdebench-drop-", dir="/tmp"))
    d.chmod(0o1777)
    yield d
    for f in d.glob("pid-*"):  # the attack's daemons, started by these tests
        pid = int(f.read_text() or 0)
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def checkout(exported: Path, dest: Path, fixed: bool, tasks_dir: Path) -> Path:
    repo_mod._git(dest.parent, "clone", "-q", "-b", "main", str(exported / "environment" / "repo.bundle"), str(dest))
    if fixed:
        repo_mod.apply_patch(dest, load(tasks_dir / TASK).oracle_patch)
    return dest


def append(app: Path, code: str) -> None:
    init = app / PACKAGE / "__init__.py"
    init.write_text(init.read_text() + "\n\n" + textwrap.dedent(code))


# A daemon, detached at import (new session, double fork), that looks for the verifier's process,
# reads every file of its dir it can for half a minute, and drops what it gets.
LINGER = '''
import os as _os
import time as _time

_DROP = {drop!r}


def _linger():
    if _os.fork():
        return
    _os.setsid()
    if _os.fork():
        _os._exit(0)
    try:
        with open(_os.path.join(_DROP, "pid-%d" % _os.getpid()), "w") as f:
            f.write(str(_os.getpid()))
        end = _time.time() + 30
        while _time.time() < end:
            for pid in _os.listdir("/proc"):
                try:
                    argv = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\\0")
                except OSError:
                    continue
                for part in argv:
                    if part.endswith(b"verify.py"):
                        for root, _dirs, files in _os.walk(_os.path.dirname(part.decode())):
                            for name in files:
                                try:
                                    data = open(_os.path.join(root, name), "rb").read()
                                except OSError:
                                    continue
                                with open(_os.path.join(_DROP, "got-" + name), "wb") as f:
                                    f.write(data)
            open(_os.path.join(_DROP, "alive-%d" % _os.getpid()), "w").write(str(_time.time()))
            _time.sleep(0.1)
    finally:
        _os._exit(0)


_linger()
'''


def _daemons(drop: Path) -> list[int]:
    return [int(f.read_text()) for f in drop.glob("pid-*") if f.read_text()]


def test_a_lingering_reader_gets_nothing_and_dies_with_its_phase(exported, tasks_dir, tmp_path, drop):
    app = checkout(exported, tmp_path / "app", True, tasks_dir)
    append(app, LINGER.format(drop=str(drop)))
    r = verifier_run.run(exported / "tests", app, tmp_path / "logs")
    pids = _daemons(drop)
    assert len(pids) >= 2, sorted(p.name for p in drop.iterdir())  # one per phase (and per import)
    assert not [p for p in pids if _alive(p)], "a daemon outlived the verifier"
    got = sorted(p.name for p in drop.glob("got-*"))
    assert got == [], f"the daemon read {got}"
    assert r.reward == "1", r.out  # contained, it does not break the grade of a real fix
    time.sleep(0.5)
    stamps = {f.name: f.read_text() for f in drop.glob("alive-*")}
    time.sleep(0.5)
    assert stamps == {f.name: f.read_text() for f in drop.glob("alive-*")}  # nothing of it still runs


def test_the_lingering_reader_is_real_outside_the_verifier(exported, tasks_dir, tmp_path, drop):
    """Imported by a plain interpreter beside a process named verify.py whose dir holds a key, the
    daemon reads the key and outlives the process that imported it."""
    app = checkout(exported, tmp_path / "app", True, tasks_dir)
    append(app, LINGER.format(drop=str(drop)))
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "expected.json").write_text('{"observations": "the answer key"}')
    (fake / "verify.py").write_text("import time\ntime.sleep(20)\n")
    holder = subprocess.Popen([sys.executable, str(fake / "verify.py")])
    try:
        env = {**os.environ, "PYTHONPATH": str(app)}
        subprocess.run([sys.executable, "-c", f"import {PACKAGE}"], cwd=app, env=env, check=True, timeout=60)
        for _ in range(100):
            if (drop / "got-expected.json").exists():
                break
            time.sleep(0.1)
        assert (drop / "got-expected.json").read_text() == '{"observations": "the answer key"}'
        assert [p for p in _daemons(drop) if _alive(p)], "the daemon should outlive a plain import"
    finally:
        holder.kill()
        holder.wait()


# A forger started at import: from then on, until it is killed, it writes runner records with the
# run's marker (read from the runner's own argv) saying every test of the workspace passed, with
# observations that hold for the visible ones; and it copies them to the drop dir.
FORGE = '''
import ast as _ast
import glob as _glob
import json as _json
import os as _os
import sys as _sys
import time as _time

_DROP = {drop!r}


def _forged():
    try:
        cfg = _json.loads(_sys.argv[1])
    except (IndexError, ValueError):
        return []
    lines = []
    for path in _glob.glob("tests/**/*.py", recursive=True):
        tree = _ast.parse(open(path).read())
        for fn in (n for n in tree.body if isinstance(n, _ast.FunctionDef) and n.name.startswith("test")):
            checks = sum(isinstance(c, _ast.Call) and isinstance(c.func, _ast.Attribute)
                         and c.func.attr in ("compare", "truth") for c in _ast.walk(fn))
            rec = {{"k": "test", "id": path + "::" + fn.name, "outcome": "passed", "message": "",
                    "duration": 0.0, "obs": [["check", True]] * checks}}
            lines.append("\\n\\x1e" + cfg["marker"] + " " + _json.dumps(rec) + "\\n")
    return lines


def _forge():
    lines = _forged()
    if not lines or _os.fork():
        return
    _os.setsid()
    try:
        with open(_os.path.join(_DROP, "pid-%d" % _os.getpid()), "w") as f:
            f.write(str(_os.getpid()))
        with open(_os.path.join(_DROP, "forged-%d" % _os.getpid()), "w") as f:
            f.write("".join(lines))
        end = _time.time() + 30
        while _time.time() < end:
            for line in lines:
                _os.write(1, line.encode())
            _time.sleep(0.005)
    except OSError:
        pass
    finally:
        _os._exit(0)


_forge()
'''


def test_records_forged_around_the_runners_end_are_not_outcomes(exported, tasks_dir, tmp_path, drop):
    app = checkout(exported, tmp_path / "app", False, tasks_dir)
    append(app, FORGE.format(drop=str(drop)))
    r = verifier_run.run(exported / "tests", app, tmp_path / "logs")
    forged = "".join(f.read_text() for f in drop.glob("forged-*"))
    assert "test_repro_overcharge.py::test_line_is_not_overcharged" in forged  # the forger did run, both phases
    assert '"obs": [["check", true]' in forged
    assert r.reward == "0" and r.details["tampering"].startswith("report records after the runner's end"), r.out
    assert r.details["counts"]["FAIL_TO_PASS"]["passed"] == 0  # the buggy code's repro tests still fail
    assert not [p for p in _daemons(drop) if _alive(p)]


def test_the_forged_records_would_fool_a_naive_reading():
    """Read the old way (every line with the marker, the last record of an id winning), a forged
    record written after the runner's end turns a failed test into a pass; the verifier's Report
    stops at the end record and counts what follows as forgery."""
    from sdebench.interop import harbor_verify

    marker = "ab12"
    prefix = "\n\x1e" + marker + " "
    real = [{"k": "start"}, {"k": "test", "id": "t::a", "outcome": "failed"}, {"k": "end", "exit": 1}]
    forged = {"k": "test", "id": "t::a", "outcome": "passed"}
    stream = "".join(prefix + json.dumps(r) + "\n" for r in [*real, forged]).encode()
    naive = {}
    for line in stream.split(b"\n"):
        if line.startswith(b"\x1e" + marker.encode() + b" "):
            rec = json.loads(line.split(b" ", 1)[1])
            if rec.get("k") == "test":
                naive[rec["id"]] = rec["outcome"]
    assert naive == {"t::a": "passed"}
    report = harbor_verify.Report(marker)
    for i in range(0, len(stream), 7):  # in pieces, as a pipe delivers it
        report.feed(stream[i:i + 7])
    # records come out normalised by the one bounded parser (sdebench.grading.records)
    assert [(r["k"], r.get("id"), r.get("outcome")) for r in report.records] == [
        ("start", None, None), ("test", "t::a", "failed"), ("end", None, None)]
    assert report.records[-1]["exit"] == 1 and report.after_end == 1
    assert harbor_verify.outcomes(report.records, False) == ({"t::a": "failed"}, False)


def test_report_lines_are_bounded():
    from sdebench.interop import harbor_verify

    report = harbor_verify.Report("ab12")
    junk = b"x" * (harbor_verify.MAX_RECORD + 10)  # a line that is not the runner's: never kept
    report.feed(junk)
    report.feed(b"\n\x1eab12 " + b"{" * (harbor_verify.MAX_RECORD + 10) + b"\n")  # too long for a record
    report.feed(b'\x1eab12 {"k": "start"}\n')
    assert report.records == [{"k": "start"}] and len(report._buf) == 0


def test_a_verifier_that_is_not_root_fails_closed(exported, tasks_dir, tmp_path):
    app = checkout(exported, tmp_path / "app", True, tasks_dir)
    r = verifier_run.run(exported / "tests", app, tmp_path / "logs", not_root=True)
    assert r.reward == "0" and r.details["error"] == (
        "fails closed: the verifier is not root, so it cannot run the submission as an unprivileged user"), r.out
    assert set(r.details["tests"]["HIDDEN_TO_PASS"].values()) == {"failed"}
    assert verifier_run.run(exported / "tests", app, tmp_path / "root-logs").reward == "1"  # the same fix, demoted


@pytest.mark.skipif(not verifier_run.out_of_reach(), reason="the interpreter is reachable by every user here")
def test_a_verifier_whose_users_cannot_run_the_interpreter_fails_closed(exported, tasks_dir, tmp_path):
    app = checkout(exported, tmp_path / "app", True, tasks_dir)
    r = verifier_run.run(exported / "tests", app, tmp_path / "logs", reachable=False)
    assert r.reward == "0" and r.details["error"].startswith("fails closed: an unprivileged user cannot "), r.out


def test_a_key_that_cannot_be_removed_fails_closed(exported, tasks_dir, tmp_path):
    app = checkout(exported, tmp_path / "app", True, tasks_dir)
    r = verifier_run.run(exported / "tests", app, tmp_path / "logs", ro_tests=True)
    assert r.reward == "0" and r.details["error"].startswith(
        "fails closed: the answer key could not be removed and stays readable: "), r.out
    assert "expected.json" in r.details["error"] and "expected.json" in r.left
