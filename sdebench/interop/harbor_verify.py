"""Default-fail verifier shipped inside exported Harbor tasks (copied as tests/verify.py).

Stdlib only; runs in the task container as `python3 /tests/verify.py` after tests/test.sh wrote
reward 0 to reward.json. It applies sdebench's grading rules, shipped beside it as tests/rules.py (the same module
the framework grades with, with tests/artifacts.py), in two phases on copies of /app:

1. visible: test and pytest-config files back to their HEAD copies (tests/pristine/ holds the
   HEAD tree), bytecode and start-up hooks dropped, then the guards (unchanged source, compile) and the visible tests
   as written through the sdebench runner (tests/_runner.py, isolated, report on its stdout);
2. held out: a fresh copy with the visible tests replaced by their observation versions
   (tests/observed/) and the hidden observation tests (tests/hidden/) added; the runner reports
   observed values, which this script compares with the expected ones (tests/expected.json),
   read before any submitted code runs.

Reward 1 iff every FAIL_TO_PASS and PASS_TO_PASS test passes in both phases and every
HIDDEN_TO_PASS test's observations match. Each runner process is stopped from outside when a
test exceeds the per-test limit. When the verifier runs as root, the runs execute as an
unprivileged user who cannot read tests/ (when that user can run the interpreter at all). SDEBENCH_APP and SDEBENCH_LOG_DIR override /app and
/logs/verifier (for checks outside a container).
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import rules  # noqa: E402 - shipped beside this script

APP = Path(os.environ.get("SDEBENCH_APP", "/app"))
LOGS = Path(os.environ.get("SDEBENCH_LOG_DIR", "/logs/verifier"))
NOBODY = 65534
VISIBLE = ("FAIL_TO_PASS", "PASS_TO_PASS")


def tree(root):
    """Regular files under root as relative path -> bytes (caches and .git left out)."""
    out = {}
    for rel in rules.walk_files(root) if root.is_dir() else []:
        if not rules.SKIP_DIRS & set(rel.split("/")):
            out[rel] = (root / rel).read_bytes()
    return out


def finish(reward, details):
    """Write Harbor's reward.json (reward and pass ratio) and details; print the verdict."""
    rewards = {"reward": reward, "pass_ratio": details.get("pass_ratio", 0.0)}
    (LOGS / "reward.json").write_text(json.dumps(rewards, sort_keys=True) + "\n")
    (LOGS / "details.json").write_text(json.dumps(details, indent=1, sort_keys=True) + "\n")
    print(json.dumps({"reward": reward, **{k: v for k, v in details.items() if k != "tests"}}, sort_keys=True))
    return 0


def _demote():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def can_demote():
    """Whether the runs can execute as an unprivileged user (root, and the interpreter usable by nobody)."""
    if os.geteuid() != 0:
        return False
    try:
        probe = subprocess.run([sys.executable, "-I", "-c", "import pytest"], preexec_fn=_demote, cwd="/",
                               capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def run_phase(ws, paths, modules, mode, spec, limit):
    """One runner process on `ws`: its report lines, and why it stopped early (None if it finished)."""
    try:
        return _run_phase(ws, paths, modules, mode, spec, limit)
    except Exception as e:  # noqa: BLE001 - default-fail: the reason is recorded
        return [], f"the runner could not run: {type(e).__name__}: {e}"


def _run_phase(ws, paths, modules, mode, spec, limit):
    out = ws / ".sdebench-out"
    out.mkdir(exist_ok=True)
    (out / "pytest.ini").write_text("[pytest]\naddopts =\n")
    marker = secrets.token_hex(8)
    cfg = {"mode": mode, "modules": modules, "marker": marker,
           "shadow_check": spec.get("added_names", []),
           "pytest": ["-q", "--tb=short", "-p", "no:cacheprovider", "--rootdir=.", "--confcutdir=.", "-c",
                      ".sdebench-out/pytest.ini", "--import-mode=append", "--continue-on-collection-errors", *paths]}
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
                "HOME": str(ws), "TMPDIR": tempfile.gettempdir()})
    demote = spec.get("demote", False)
    if demote:
        for p in [ws, *ws.rglob("*")]:
            os.lchown(p, NOBODY, NOBODY)
    argv = [sys.executable, "-I", "-B", "-c", (HERE / "_runner.py").read_text(), json.dumps(cfg)]
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_demote if demote else None)
    state = {"since": time.monotonic(), "phase": "boot"}
    prefix = ("\x1e" + marker + " ").encode()
    lines = []  # the runner's report records, from the same stream as its progress markers

    def read():
        for line in proc.stdout:
            if line.startswith(prefix):
                try:
                    rec = json.loads(line[len(prefix):])
                except ValueError:
                    continue
                if not isinstance(rec, dict):
                    continue
                if "p" in rec:
                    state["phase"], state["since"] = rec.get("p"), time.monotonic()
                elif "k" in rec:
                    lines.append(rec)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    start, why = time.monotonic(), None
    while proc.poll() is None:
        time.sleep(0.05)
        now = time.monotonic()
        allowed = 60.0 if state["phase"] == "boot" else limit * (3 if state["phase"] == "collect" else 1)
        if now - start > spec["timeout"] or now - state["since"] > allowed:
            why = f"stopped in phase {state['phase']}: over its time limit"
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    reader.join(5)
    if why is None and not any(r.get("k") == "end" for r in lines):
        why = f"the test process ended before finishing (exit {proc.returncode})"
    return lines, why


def main():
    """Grade /app; reward stays 0 on any failure."""
    LOGS.mkdir(parents=True, exist_ok=True)
    (LOGS / "reward.json").write_text('{"reward": 0}\n')
    spec = json.loads((HERE / "expected.json").read_text())
    expected = spec.get("observations", {})
    declared = set(spec["test_files"])
    pristine, hidden, observed = tree(HERE / "pristine"), tree(HERE / "hidden"), tree(HERE / "observed")
    demote = can_demote()
    if demote:
        with contextlib.suppress(OSError):  # the runs execute as nobody: keep the answer key out of reach
            os.chmod(HERE, 0o700)
    tmp = Path(tempfile.mkdtemp(prefix="verify-"))
    os.chmod(tmp, 0o755)
    try:
        ws1, ws2 = tmp / "1" / "repo", tmp / "2" / "repo"
        for rel, data in tree(APP).items():
            rules.force_write(ws1, rel, data)
        ws1.mkdir(parents=True, exist_ok=True)
        # tests/pristine/ holds the whole HEAD tree.
        prep = rules.prepare_copy(ws1, pristine, declared)
        changed = prep.changed
        if not changed and not prep.deleted:
            return finish(0, {"guard": "unchanged: no source file differs from the original"})
        errors = rules.compile_errors(ws1, changed)
        if errors:
            rel, msg = next(iter(errors.items()))
            return finish(0, {"guard": f"compile: {rel}: {msg}"})
        shutil.copytree(ws1, ws2)
        for rel, content in {**observed, **hidden}.items():
            rules.force_write(ws2, rel, content)
        modules = rules.module_names(changed)
        groups = spec["tests"]
        visible_paths = sorted({i.split("::")[0] for g in VISIBLE for i in groups[g]})
        phase_spec = {"timeout": spec["timeout"], "added_names": prep.added_names, "demote": demote}
        limit = float(spec.get("test_time_limit_s", 10.0))
        results = {}
        threads = [
            threading.Thread(target=lambda: results.__setitem__(1, run_phase(ws1, visible_paths, modules, "visible",
                                                                             phase_spec, limit))),
            threading.Thread(target=lambda: results.__setitem__(2, run_phase(ws2, sorted({**observed, **hidden}),
                                                                             modules, "observe", phase_spec, limit))),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (lines1, why1), (lines2, why2) = results[1], results[2]
        if not any(r.get("k") == "start" for r in lines1) or not any(r.get("k") == "start" for r in lines2):
            return finish(0, {"error": "the test runner did not start"})
        for kind, label in (("shadow", "shadow"), ("import", "import"), ("tamper", "tampering")):
            bad = [r for r in lines1 if r.get("k") == kind]
            if bad:
                return finish(0, {"guard": label, "details": bad[:5]})
        p1 = {r["id"]: r.get("outcome") for r in lines1 if r.get("k") == "test"}
        p2 = {r["id"]: (r.get("outcome"), r.get("obs")) for r in lines2 if r.get("k") == "test"}
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
            "runs_as": "nobody" if demote else "the verifier's user",
        }
        if why1 or why2:
            details["stopped"] = why1 or "held-out phase stopped early"
        clean = why1 is None and why2 is None
        return finish(1 if clean and total and passed == total else 0, details)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
