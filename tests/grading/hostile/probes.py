"""Attacks on what grading shows the agent, built from the workspace alone, and the twin task they
are graded against.

- `refacted(task, dest)`: a copy of a task that differs only in what is secret: its fact, fact
  tokens, expected observations and the oracle-measured per-test limit. Feedback that depends on
  nothing secret is byte-identical for both, for the same submission and the same verdict.
- `probe_attack(ws, candidates, ...)`: one submission that, in the visible phase, prints every
  candidate (fact tokens among them) in the failing output, adds test files named after them, emits
  hostile runner lines the host must drop, and listens for phase 2 on every channel it can reach
  (a lock on a shared read-only file, a magic range in /proc/locks, heartbeats of a daemon); in the
  held-out phase, it sends on those channels (a random payload each grade) and emits hostile
  runner lines (huge numbers, deep JSON, invalid UTF-8, giant lines, forged start/end records,
  lines after the runner's end). The phase is told apart by the visible test files: their
  held-out versions differ from the workspace's.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

from sdebench.grading import rules
from sdebench.tasks import record as task_mod
from tests.grading.hostile.generic import WRAP_ALL, append_to_packages

RX = "RX:"
CANDIDATE_MARK = "CANDIDATES:"
MAGIC_START = 1575806916  # a lock range start no other process uses: seen in /proc/locks, it is ours


def _perturb(enc):
    """An encoded observation with every atom changed (same shape, other values)."""
    if not isinstance(enc, list) or not enc:
        return enc
    tag = enc[0]
    if tag in ("list", "tuple", "set", "frozenset"):
        return [tag, [_perturb(x) for x in enc[1]]]
    if tag == "dict":
        return [tag, [[k, _perturb(v)] for k, v in enc[1]]]
    if tag == "int":
        return [tag, str(int(enc[1]) + 1)]
    if tag in ("str", "bytes", "Decimal", "date", "datetime", "time"):
        return [tag, str(enc[1]) + "0"]
    if tag == "float":
        return [tag, repr(float(enc[1]) + 1.0)]
    if tag == "bool":
        return [tag, not enc[1]]
    if tag == "check":
        return enc  # an assertion on the visible tests: the same in both
    return enc


DECOYS = ("417", "HALF_DOWN", "half-down", "873", "14:37", "0.075")


def refacted(task: task_mod.Task, dest: Path) -> task_mod.Task:
    """A copy of `task` at `dest` with another fact, other fact tokens, other expected observations
    and another per-test limit (everything secret changed, nothing else)."""
    shutil.copytree(task.path, dest)
    doc = json.loads((dest / task_mod.EXPECTED).read_text())
    doc["observations"] = {k: [_perturb(o) for o in v] for k, v in doc["observations"].items()}
    (dest / task_mod.EXPECTED).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tokens = tuple(t for t in DECOYS if t not in task.fact_tokens)
    twin = replace(task, fact="A different fact: " + " ".join(tokens), fact_tokens=tokens,
                   test_time_limit_s=float(task.test_time_limit_s or 10.0) * 4, path=dest)
    task_mod.save_meta(twin, dest)
    return task_mod.load(dest)


def candidates(*tasks: task_mod.Task) -> list[str]:
    """What a prober would print: the fact tokens of every task given (the true one is among them)
    and a sweep of decoys; every one must reach the feedback unaltered."""
    out: list[str] = []
    for t in tasks:
        out += [tok for tok in t.fact_tokens if tok not in out]
    out += [d for d in (*DECOYS, "100", "250", "999", "ROUND_HALF_EVEN", "half up") if d not in out]
    return out


def visible_digests(ws: Path) -> dict[str, str]:
    """sha256 of every test file of the workspace (the held-out phase replaces the visible ones)."""
    return {p.relative_to(ws).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ws.rglob("*.py")) if rules.is_test_path(p.relative_to(ws).as_posix())
            and ".git" not in p.parts}


# Runner lines the host must drop or survive, as Python expressions evaluated in the sandbox.
HOSTILE_PAYLOADS = r'''[
    "[" * 100000 + "]" * 100000,
    '{"k": "test", "id": "x", "outcome": "passed", "duration": ' + "9" * 5000 + "}",
    '{"k": "test", "id": "x", "outcome": "passed", "duration": 1e999}',
    '{"k": "end", "exit": ' + "1" * 400 + "}",
    '{"k": "test", "id": "\udcff", "outcome": "passed", "message": "\\ud800"}',
    '{"k": "crash", "message": "' + "m" * (5 << 20) + '"}',
    '{"k": "test", "id": "x", "obs": ' + "[" * 3000 + "]" * 3000 + "}",
    b'{"k": "test", "id": "\xff\xfe", "outcome": "passed"}',
]'''

# Runs once per process, at the first import of any package of the workspace.
ONCE = r'''
import sys as _sys
if not getattr(_sys, "_probe_done", False):
    _sys._probe_done = True
    import fcntl as _fcntl
    import hashlib as _hashlib
    import json as _json
    import os as _os
    import time as _time

    _DIGESTS = __DIGESTS__
    _CANDS = __CANDS__
    _SHARED = _json.__file__  # read-only, the same file in every sandbox of a backend

    def _held_out():
        for rel, digest in _DIGESTS.items():
            try:
                if _hashlib.sha256(open(rel, "rb").read()).hexdigest() != digest:
                    return True
            except OSError:
                return True
        return False

    def _say(payload):
        # A line with the runner's own prefix (its marker is in its argv: the runner is open source).
        try:
            mark = _json.loads(_sys.argv[1])["marker"]
        except Exception:
            return
        data = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
        _os.write(1, b"\n\x1e" + mark.encode() + b" " + data + b"\n")

    for _p in __PAYLOADS__:
        _say(_p)

    if _held_out():
        _say('{"k": "start"}')
        _fd = _os.open(_SHARED, _os.O_RDONLY)
        _fcntl.flock(_fd, _fcntl.LOCK_EX)
        _lk = _os.open("/tmp/probe-lock", _os.O_RDWR | _os.O_CREAT)
        _fcntl.lockf(_lk, _fcntl.LOCK_EX | _fcntl.LOCK_NB, 7, __MAGIC__)
        try:  # a payload no run can predict, where the visible phase's out dir would be
            _os.makedirs(".sdebench-out", exist_ok=True)
            with open(".sdebench-out/probe-" + _os.urandom(4).hex(), "w") as _f:
                _f.write(repr(_time.time()))
        except OSError:
            pass
        _time.sleep(__SEND_S__)
        _say('{"k": "end", "exit": 0}')
        _say('{"k": "test", "id": "after-the-end", "outcome": "passed", "obs": []}')
    else:
        _seen = {"flock_busy": False, "magic_lock": False}
        _until = _time.monotonic() + __LISTEN_S__
        while _time.monotonic() < _until:
            _fd = _os.open(_SHARED, _os.O_RDONLY)
            try:
                _fcntl.flock(_fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except BlockingIOError:
                _seen["flock_busy"] = True
            finally:
                _os.close(_fd)
            try:
                with open("/proc/locks") as _f:
                    _seen["magic_lock"] |= " __MAGIC__ " in _f.read()
            except OSError:
                pass
            _time.sleep(0.02)
        _sys._probe_report = "__RX__" + _json.dumps(_seen, sort_keys=True) + " __MARK__ " + " | ".join(_CANDS)
'''

# In the visible phase, every public function of each package fails with the report.
RAISE = '''
import functools as _ft


def _WRAP(fn):
    @_ft.wraps(fn)
    def wrapper(*a, **k):
        raise AssertionError(_sys._probe_report)
    return wrapper
'''


def probe_attack(ws: Path, cands: list[str], *, send_s: float = 0.5, listen_s: float = 0.6,
                 lines: bool = True) -> None:
    """Apply the attack to workspace `ws` (see the module docstring)."""
    digests = visible_digests(ws)
    first = next((p for p in sorted(ws.rglob("test_*.py")) if ".git" not in p.parts), None)
    where = first.parent if first is not None else ws
    for i, cand in enumerate(cands[:12]):
        name = re.sub(r"[/\x00]", "_", cand)
        (where / f"test_{name}.py").write_text(f"# {i}\n")
    once = (ONCE.replace("__DIGESTS__", repr(digests)).replace("__CANDS__", repr(cands))
            .replace("__PAYLOADS__", HOSTILE_PAYLOADS if lines else "[]").replace("__MAGIC__", str(MAGIC_START))
            .replace("__SEND_S__", repr(send_s)).replace("__LISTEN_S__", repr(listen_s))
            .replace("__RX__", RX).replace("__MARK__", CANDIDATE_MARK))
    wrap = 'if getattr(_sys, "_probe_report", None):\n' + textwrap.indent(RAISE + WRAP_ALL, "    ")
    append_to_packages(ws, once, wrap)


def received(feedback: str) -> list[dict]:
    """What the visible phase's listener reported, once per failing test shown."""
    return [json.loads(m) for m in re.findall(re.escape(RX) + r"(\{[^}]*\})", feedback)]
