"""Default-fail verifier shipped inside exported Harbor tasks (copied as tests/verify.py).

Stdlib only; runs in the task container as root, `python3 /tests/verify.py`, after tests/test.sh
wrote reward 0 to reward.json. It applies sdebench's grading rules, shipped beside it as
tests/rules.py (the same module the framework grades with, with tests/artifacts.py):

0. before any submitted code runs: the answer key (tests/expected.json) and the held-out tests
   (tests/hidden/, tests/observed/) are read into memory and removed from disk, and tests/ is
   made root-only. The submission then runs only as a fresh unprivileged user, one per phase,
   that owns nothing else. When that is impossible (the verifier is not root, such a user cannot
   run the interpreter, or the key could not be removed and stays readable) the verifier fails
   closed: reward 0 and the reason in its output, never a run as its own user;
1. visible: a copy of /app with test and pytest-config files back to their HEAD copies
   (tests/pristine/ holds the HEAD tree), bytecode and start-up hooks dropped; the guards
   (unchanged source, compile), then the visible tests as written through the sdebench runner
   (tests/_runner.py, isolated, report on its stdout);
2. held out, after phase 1 has ended: a fresh copy of the same sanitised tree with the visible
   tests replaced by their observation versions and the hidden observation tests added; the
   runner reports observed values, which this script compares with the expected ones.

Each phase ends with every process of its user killed (the runner's tree, whatever it forked or
detached, whatever session it made), and its process count is capped. The runner's report is
read with bounded lines and ends at its `end` record: a report record after it, or an id
reported twice, marks the phase as tampered with. Reward 1 iff every FAIL_TO_PASS and
PASS_TO_PASS test passes in both phases, every HIDDEN_TO_PASS test's observations match, and
both phases finished cleanly. SDEBENCH_APP and SDEBENCH_LOG_DIR override /app and /logs/verifier
(for checks outside a container).
"""

import contextlib
import json
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __package__:  # imported from the framework (its tests)
    from sdebench.grading import records, rules
else:  # tests/verify.py, with rules.py and records.py shipped beside it
    sys.path.insert(0, str(HERE))
    import records  # type: ignore[no-redef]
    import rules  # type: ignore[no-redef]

APP = Path(os.environ.get("SDEBENCH_APP", "/app"))
LOGS = Path(os.environ.get("SDEBENCH_LOG_DIR", "/logs/verifier"))
VISIBLE = ("FAIL_TO_PASS", "PASS_TO_PASS")
SECRETS = ("expected.json", "hidden", "observed")
UID_BASE, UID_SPAN = 0x5D000000, 1 << 20  # fresh users: a range no image assigns
NPROC = 256  # processes a phase's user may hold at once (a fork bomb stops there)
MAX_RECORD = 4 << 20  # bytes of one report line
MAX_REPORT = 16 << 20  # bytes of report kept per phase
MARK = b"\x1e"
SWEEP_TRIES = 200
PROBE = """import sys
import pytest  # noqa: F401 - the phases need it
for p in sys.argv[1:]:
    try:
        open(p, "rb").close() if not __import__("os").path.isdir(p) else __import__("os").listdir(p)
        print("readable:" + p)
    except OSError:
        pass
"""


def tree(root):
    """Regular files under root as relative path -> bytes (caches and .git left out)."""
    out = {}
    for rel in rules.walk_files(root) if root.is_dir() else []:
        if not rules.SKIP_DIRS & set(rel.split("/")):
            out[rel] = (root / rel).read_bytes()
    return out


def finish(reward, details, groups):
    """Write Harbor's reward.json and details (every graded id, failed unless proven); print the verdict."""
    tests = {g: {i: "failed" for i in ids} for g, ids in groups.items()}
    for g, outcomes in (details.get("tests") or {}).items():
        tests.setdefault(g, {}).update(outcomes)
    details = {**details, "tests": tests}
    rewards = {"reward": reward, "pass_ratio": details.get("pass_ratio", 0.0)}
    (LOGS / "reward.json").write_text(json.dumps(rewards, sort_keys=True) + "\n")
    (LOGS / "details.json").write_text(json.dumps(details, indent=1, sort_keys=True) + "\n")
    print(json.dumps({"reward": reward, **{k: v for k, v in details.items() if k != "tests"}}, sort_keys=True))
    return 0


# --- the answer key and the users the submission runs as ------------------------------------
def take_key():
    """Read the answer key and the held-out tests into memory, then remove them; what could not be removed."""
    spec = json.loads((HERE / "expected.json").read_text())
    hidden, observed = tree(HERE / "hidden"), tree(HERE / "observed")
    left = []
    for name in SECRETS:
        p = HERE / name
        try:
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        except OSError:
            left.append(str(p))
    with contextlib.suppress(OSError):  # a read-only tests/ dir: the probe tells whether anything stays readable
        os.chmod(HERE, 0o700)
    return spec, hidden, observed, left


def _demote(uid):
    def run():
        resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return run


def fresh_uid():
    """A user id no process holds (the phase's processes are then exactly that user's)."""
    for _ in range(50):
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        if not holders(uid):
            return uid
    raise RuntimeError("no free user id")


def cannot_demote(left):
    """Why the submission cannot run as an unprivileged user with the key out of its reach (None: it can)."""
    if os.geteuid() != 0:
        return "the verifier is not root, so it cannot run the submission as an unprivileged user"
    uid = fresh_uid()
    try:
        probe = subprocess.run([sys.executable, "-I", "-c", PROBE, *left],
                               preexec_fn=_demote(uid), cwd="/", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"an unprivileged user cannot be started: {type(e).__name__}: {e}"
    finally:
        sweep(uid)
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or [""])[-1][:200]
        return f"an unprivileged user cannot run {sys.executable} with pytest: {tail}"
    readable = [ln.split(":", 1)[1] for ln in probe.stdout.splitlines() if ln.startswith("readable:")]
    if readable:
        return f"the answer key could not be removed and stays readable: {', '.join(readable)}"
    return None


def holders(uid):
    """Pids of the processes whose real user is `uid`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            out.append(int(d))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return out


def sweep(uid):
    """Kill every process of `uid` (as that user: kill(-1) reaches all of its processes and no other
    one); repeated until none is left. Whether none is left."""
    for _ in range(SWEEP_TRIES):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child only makes syscalls
            pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        if not holders(uid):
            return True
        time.sleep(0.01)
    return False


# --- one phase ----------------------------------------------------------------------------------
class Report:
    """The runner's report, read from its stdout with bounded lines, up to its `end` record."""

    def __init__(self, marker):
        self.prefix = MARK + marker.encode() + b" "
        self.records = []
        self.phase, self.since = "boot", time.monotonic()
        self.size = 0
        self.ended = False
        self.overflow = False
        self.after_end = 0  # report records that came after `end`: forged
        self._buf = bytearray()
        self._skip = False

    def feed(self, chunk):
        """Take stdout bytes; only lines that start with the runner's prefix are kept, each at most MAX_RECORD."""
        pos = 0
        while True:
            nl = chunk.find(b"\n", pos)
            if not self._skip:
                self._buf += chunk[pos:] if nl < 0 else chunk[pos:nl]
                if len(self._buf) > MAX_RECORD or not self.prefix.startswith(bytes(self._buf[:len(self.prefix)])):
                    self._buf.clear()
                    self._skip = True
            if nl < 0:
                return
            if not self._skip and self._buf.startswith(self.prefix):
                self._line(bytes(self._buf[len(self.prefix):]))
            self._buf.clear()
            self._skip = False
            pos = nl + 1

    def _line(self, data):
        # the framework's one bounded parser: never raises, whatever the code under test printed
        rec = records.parse(data)
        if rec is None:
            return
        if "p" in rec:
            if not self.ended:
                self.phase, self.since = rec.get("p"), time.monotonic()
            return
        if "k" not in rec:
            return
        if self.ended:
            self.after_end += 1
            return
        self.size += len(data)
        if self.size > MAX_REPORT:
            self.overflow = True
            return
        self.records.append(rec)
        self.ended = rec.get("k") == "end"


class Survivors(RuntimeError):
    """Processes of a phase's user that outlived every kill."""


def run_phase(ws, paths, modules, mode, spec, limit):
    """One runner process on `ws` as a fresh user: its report, and why it is not clean (None if it is).
    Survivors when a process of that user outlives the phase (nothing else may run then)."""
    uid = fresh_uid()
    try:
        return _run_phase(ws, paths, modules, mode, spec, limit, uid)
    except Exception as e:  # noqa: BLE001 - default-fail: the reason is recorded
        return Report(""), f"the runner could not run: {type(e).__name__}: {e}"
    finally:
        if not sweep(uid):
            raise Survivors(f"processes of the {mode} phase survived every kill")


def _run_phase(ws, paths, modules, mode, spec, limit, uid):
    home = ws.parent / "home"
    home.mkdir()
    for p in [home, ws, *ws.rglob("*")]:
        os.lchown(p, uid, uid)
    marker = secrets.token_hex(8)
    cfg = {"mode": mode, "modules": modules, "marker": marker, "shadow_check": spec["added_names"],
           "pytest": ["-q", "--tb=short", "-p", "no:cacheprovider", "--rootdir=.", "--confcutdir=.", "-c", "/dev/null",
                      "--import-mode=append", "--continue-on-collection-errors", *paths]}
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
                "HOME": str(home), "TMPDIR": str(home)})
    argv = [sys.executable, "-I", "-B", "-c", (HERE / "_runner.py").read_text(), json.dumps(cfg)]
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_demote(uid))
    report = Report(marker)

    def read():
        while chunk := proc.stdout.read1(1 << 16):
            report.feed(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    start, why = time.monotonic(), None
    while proc.poll() is None:
        time.sleep(0.05)
        now = time.monotonic()
        phase = report.phase
        allowed = 60.0 if phase == "boot" else limit * (3 if phase == "collect" else 1)
        if now - start > spec["timeout"] or now - report.since > allowed:
            why = f"stopped in phase {phase}: over its time limit"
            break
    # The runner ended (or is over time): nothing of this user outlives the phase.
    sweep(uid)
    proc.wait()
    reader.join(10)
    if reader.is_alive():
        why = why or "the report stream did not close"
    if why is None and report.overflow:
        why = f"the test report passed {MAX_REPORT >> 20} MiB"
    if why is None and not report.ended:
        why = f"the test process ended before finishing (exit {proc.returncode})"
    return report, why


def outcomes(records, with_obs):
    """id -> outcome (and observations) from report records; an id reported twice counts as failed."""
    out, seen = {}, set()
    for r in records:
        if r.get("k") != "test" or not isinstance(r.get("id"), str):
            continue
        i = r["id"]
        value = (r.get("outcome"), r.get("obs")) if with_obs else r.get("outcome")
        out[i] = (("failed", None) if with_obs else "failed") if i in seen else value
        seen.add(i)
    return out, len(seen) != sum(1 for r in records if r.get("k") == "test")


def main():
    """Grade /app; reward stays 0 on any failure."""
    LOGS.mkdir(parents=True, exist_ok=True)
    (LOGS / "reward.json").write_text('{"reward": 0}\n')
    spec, hidden, observed, left = take_key()
    groups = spec["tests"]
    expected = spec.get("observations", {})
    problem = cannot_demote(left)
    if problem:
        return finish(0, {"error": f"fails closed: {problem}"}, groups)
    tmp = Path(tempfile.mkdtemp(prefix="verify-"))
    os.chmod(tmp, 0o755)
    try:
        return grade(spec, hidden, observed, groups, expected, tmp)
    except Survivors as e:
        return finish(0, {"error": str(e)}, groups)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def grade(spec, hidden, observed, groups, expected, tmp):
    """Both phases in `tmp` and the verdict (see the module docstring)."""
    declared = set(spec["test_files"])
    pristine = tree(HERE / "pristine")
    base = tmp / "base" / "repo"
    for rel, data in tree(APP).items():
        rules.force_write(base, rel, data)
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp / "base", 0o700)  # the phases' users never see the sanitised tree they are copied from
    prep = rules.prepare_copy(base, pristine, declared)
    changed = prep.changed
    if not changed and not prep.deleted:
        return finish(0, {"guard": "unchanged: no source file differs from the original"}, groups)
    errors = rules.compile_errors(base, changed)
    if errors:
        rel, msg = next(iter(errors.items()))
        return finish(0, {"guard": f"compile: {rel}: {msg}"}, groups)
    modules = rules.module_names(changed)
    visible_paths = sorted({i.split("::")[0] for g in VISIBLE for i in groups[g]})
    phase_spec = {"timeout": spec["timeout"], "added_names": prep.added_names}
    limit = float(spec.get("test_time_limit_s", 10.0))
    ws1 = tmp / "1" / "repo"
    shutil.copytree(base, ws1)
    report1, why1 = run_phase(ws1, visible_paths, modules, "visible", phase_spec, limit)
    ws2 = tmp / "2" / "repo"
    shutil.copytree(base, ws2)
    for rel, content in {**observed, **hidden}.items():
        rules.force_write(ws2, rel, content)
    report2, why2 = run_phase(ws2, sorted({**observed, **hidden}), modules, "observe", phase_spec, limit)
    lines1, lines2 = report1.records, report2.records
    if not any(r.get("k") == "start" for r in lines1) or not any(r.get("k") == "start" for r in lines2):
        return finish(0, {"error": "the test runner did not start"}, groups)
    for kind, label in (("shadow", "shadow"), ("import", "import"), ("tamper", "tampering")):
        bad = [r for r in lines1 if r.get("k") == kind]
        if bad:
            return finish(0, {"guard": label, "details": bad[:5]}, groups)
    p1, dup1 = outcomes(lines1, False)
    p2, dup2 = outcomes(lines2, True)
    forged = report1.after_end + report2.after_end
    results_by_group = {}
    for g, ids in groups.items():
        out = {}
        for i in ids:
            ok2 = rules.observed_verdict(expected, p2, i)
            ok1 = g == "HIDDEN_TO_PASS" or rules.outcome_of(p1, i) == rules.PASSED
            out[i] = "passed" if ok1 and ok2 else "failed"
        results_by_group[g] = out
    total = sum(len(r) for r in results_by_group.values())
    passed = sum(o == "passed" for r in results_by_group.values() for o in r.values())
    details = {
        "counts": {g: {"passed": sum(o == "passed" for o in r.values()), "total": len(r)}
                   for g, r in results_by_group.items()},
        "pass_ratio": round(passed / total, 6) if total else 0.0,
        "tests": results_by_group,
        "runs_as": "a fresh unprivileged user per phase",
    }
    if why1 or why2:
        details["stopped"] = why1 or "held-out phase stopped early"
    if forged or dup1 or dup2:
        details["tampering"] = "report records after the runner's end, or an id reported twice"
    clean = why1 is None and why2 is None and not (forged or dup1 or dup2)
    return finish(1 if clean and total and passed == total else 0, details, groups)


if __name__ == "__main__":
    sys.exit(main())
