"""Test runner executed inside a sandbox as `python3 -I -B -c <this source> CONFIG_JSON`.

Self-contained (stdlib + pytest only): it is passed as source text, so it needs no file in the
workspace and nothing of sdebench inside the sandbox. Isolated mode (`-I`) keeps the environment,
the user site and the working directory off `sys.path`; the workspace is appended *after* the
standard library and site-packages, so no workspace file can stand in for a module that is
installed. Before that, every top-level name the submission added is looked up: one importable
from elsewhere (stdlib, site-packages, builtin) is refused.

Modes:
- `visible`: run the tests as written and report each outcome (phase 1, imported suites).
- `observe`: run observation tests; the `observe` fixture records values, serialised here
  canonically and type-strictly; the host compares them with the expected ones (phase 2).

With `gate` in its config, the runner stops after pytest is imported and before any workspace
code runs (a progress marker `gate` says so) until the host creates that file.

Output, on a private copy of stdout (pytest's capture does not reach it), one line per event,
each `\\x1e<marker> {json}` on a line of its own: progress markers (`{"p": ...}`), which the host
uses to enforce the per-test time limit from outside the test process, and the report (`{"k":
...}`: start, import error, test, tampering, end), written as it happens, so a run killed from
outside keeps what it finished. The host reads them from the command's output stream as it
arrives: no file to fetch after the run. A report line other than a test's is kept short enough
for one atomic pipe write, so code writing to the same stdout concurrently cannot splice into it.
After the workspace is imported, the functions this runner and pytest's reporting rely on are
compared against a snapshot taken before: a replacement is reported as tampering.
"""

import builtins
import contextlib
import datetime
import decimal
import gc
import importlib
import importlib.machinery
import json
import json.decoder
import json.encoder
import operator
import os
import re
import sys
import time
import traceback
import types

MAX_MESSAGE = 2000
ATOMIC_LINE = 4000  # bytes; Linux writes up to PIPE_BUF (4096) to a pipe in one piece
MAX_OBSERVED = 256 * 1024  # encoded characters per test
MAX_DEPTH = 40
GATE_POLL_S = 0.002

# Captured before any workspace code runs: what the encoder trusts.
_type = type
_len = len
_sorted = sorted
_dumps = json.dumps
_write = os.write
_monotonic = time.monotonic
_PLAIN_ATOMS = (type(None), bool, int, float, str, bytes)
_Decimal = decimal.Decimal
_DATES = {datetime.datetime: "datetime", datetime.date: "date", datetime.time: "time"}
_timedelta = datetime.timedelta
_int_repr, _float_repr, _bytes_hex = int.__repr__, float.__repr__, bytes.hex
_decimal_str = decimal.Decimal.__str__
_iso = {datetime.datetime: datetime.datetime.isoformat, datetime.date: datetime.date.isoformat,
        datetime.time: datetime.time.isoformat}
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
        "in": lambda a, b: operator.contains(b, a), "not in": lambda a, b: not operator.contains(b, a)}
_BUILTIN_EXC = {v: k for k, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}


class Unplain(Exception):
    """A value outside the plain-data set (or too deep or too large)."""


def encode(value, depth=0):
    """The canonical, type-strict encoding of a plain value (exact types only)."""
    t = _type(value)
    if depth > MAX_DEPTH:
        raise Unplain("too deep")
    if t is type(None):
        return ["none"]
    if t is bool:
        return ["bool", value is True]
    if t is int:
        return ["int", _int_repr(value)]
    if t is float:
        return ["float", _float_repr(value)]
    if t is str:
        return ["str", str.__str__(value)]
    if t is bytes:
        return ["bytes", _bytes_hex(value)]
    if t is _Decimal:
        return ["Decimal", _decimal_str(value)]
    if t in _DATES:
        return [_DATES[t], _iso[t](value)]
    if t is _timedelta:
        return ["timedelta", [_int_repr(value.days), _int_repr(value.seconds), _int_repr(value.microseconds)]]
    if t is list or t is tuple:
        return ["list" if t is list else "tuple", [encode(v, depth + 1) for v in list.__iter__(list(value))]]
    if t is set or t is frozenset:
        items = [encode(v, depth + 1) for v in list(value)]
        return ["set" if t is set else "frozenset", _sorted(items, key=_dumps)]
    if t is dict:
        pairs = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in list(dict.items(value))]
        return ["dict", _sorted(pairs, key=lambda kv: _dumps(kv[0]))]
    raise Unplain(f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', '?')}")


def safe_encode(value):
    """encode(), with anything outside the plain-data set recorded as a mismatch."""
    try:
        return encode(value)
    except Unplain as e:
        return ["unplain", str.__str__(e.args[0]) if e.args and _type(e.args[0]) is str else "?"]
    except RecursionError:
        return ["unplain", "too deep"]


def _is_plain(value):
    try:
        encode(value)
        return True
    except (Unplain, RecursionError):
        return False


class Observer:
    """The `observe` fixture: records one encoded value per call for the running test."""

    def __init__(self, sink):
        self._sink = sink
        self._size = 0

    def _add(self, enc):
        self._size += _len(_dumps(enc))
        if self._size > MAX_OBSERVED:
            self._sink.append(["unplain", "too large"])
            raise Unplain("observations too large")
        self._sink.append(enc)

    def __call__(self, value, name=None):
        """Record `value` (compared on the host with the oracle's value)."""
        self._add(safe_encode(value))

    def compare(self, *chain):
        """Record the truth of `a op b [op c ...]` over plain operands (anything else is a mismatch)."""
        operands, ops = chain[0::2], chain[1::2]
        bad = [o for o in operands if not _is_plain(o)]
        if bad:
            self._add(safe_encode(bad[0]))
            return
        ok = all(_OPS[op](a, b) for a, op, b in zip(operands, ops, operands[1:], strict=False))
        self._add(["check", ok is True])

    def truth(self, value, expect=True):
        """Record whether a plain value's truth is `expect` (the assertion holds)."""
        if not _is_plain(value):
            self._add(safe_encode(value))
            return
        self._add(["check", bool(value) is bool(expect)])

    def raises(self, match=None):
        """A context manager recording which exception (exact type) the block raised, then swallowing it."""
        return _Raises(self, match)


class _Raises:
    def __init__(self, obs, match):
        self.obs, self.match = obs, match

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.obs._add(["raises", None])
            return False
        if not issubclass(kind, Exception):
            return False
        name = _BUILTIN_EXC.get(kind)
        label = "builtins." + name if name else "other:" + str(getattr(kind, "__module__", "?")) + "." + str(
            getattr(kind, "__qualname__", "?"))
        self.obs._add(["raises", label])
        if self.match is not None:
            try:
                found = re.search(self.match, str(exc)) is not None
            except Exception:  # noqa: BLE001 - a broken __str__ is a mismatch
                found = None
            self.obs._add(["match", found])
        return True


# --- integrity of what the report depends on ---------------------------------------------------
def _code(v):
    if isinstance(v, types.FunctionType):
        return v.__code__
    if isinstance(v, property):
        return (v.fget, v.fset)
    if isinstance(v, (staticmethod, classmethod)):
        return v.__func__
    return None


def _same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))
    return a is b


def _entries(mod):
    """name -> (object, its code) for the functions and classes a module defines (and their members)."""
    out = {}
    name = getattr(mod, "__name__", "")
    for k, v in list(getattr(mod, "__dict__", {}).items()):
        if isinstance(v, types.FunctionType) and getattr(v, "__module__", None) == name:
            out[k] = (v, v.__code__)
        elif isinstance(v, types.BuiltinFunctionType):
            out[k] = (v, None)
        elif isinstance(v, type) and getattr(v, "__module__", None) == name:
            out[k] = (v, None)
            for ck, cv in list(v.__dict__.items()):
                if isinstance(cv, (types.FunctionType, property, staticmethod, classmethod)):
                    out[k + "." + ck] = (cv, _code(cv))
    return out


class Integrity:
    """A snapshot of the runner's, pytest's and a few stdlib modules' functions and classes.

    An entry may later hold another object only if that object was itself in the snapshot with
    the same code: pytest swaps some of its own functions while it runs (e.g. legacypath), an
    imported module's replacement is new.
    """

    TRUSTED = ("builtins", "os", "posix", "json", "json.encoder", "json.decoder", "operator", "re", "types", "decimal",
               "datetime", "importlib", "traceback", "pluggy", "pytest", "__main__")

    def __init__(self):
        self.snap = {}
        self.known = {}

    def modules(self):
        names = [n for n in list(sys.modules) if n in self.TRUSTED or n.startswith(("_pytest.", "pluggy."))]
        return {n: sys.modules[n] for n in names if sys.modules.get(n) is not None}

    def take(self):
        self.snap = {n: (m, _entries(m)) for n, m in self.modules().items()}
        self.known = {id(obj): (obj, code) for _, entries in self.snap.values() for obj, code in entries.values()}
        self.builtins = dict(vars(builtins))

    def _legit(self, obj, code):
        seen = self.known.get(id(obj))
        return seen is not None and seen[0] is obj and _same(seen[1], code)

    def changed(self):
        """What differs from the snapshot (empty when nothing was replaced)."""
        out = []
        for name, (mod, entries) in self.snap.items():
            if sys.modules.get(name) is not mod:
                out.append(f"module {name} replaced")
                continue
            now = _entries(mod)
            for k, (obj, code) in entries.items():
                cur = now.get(k)
                if cur is None:
                    out.append(f"{name}.{k} removed")
                elif (cur[0] is not obj or not _same(cur[1], code)) and not self._legit(*cur):
                    out.append(f"{name}.{k} replaced")
        now_b = vars(builtins)
        for k, v in self.builtins.items():
            if now_b.get(k) is not v:
                out.append(f"builtins.{k} replaced")
        return out[:20]


# --- the run -----------------------------------------------------------------------------------
def _fit(rec, overhead):
    """`rec` with its longest text or list halved until its line fits in one atomic write (no
    builtin looked up: the workspace may have replaced them, which a tampering record must survive)."""
    rec = {**rec}
    if _type(rec.get("what")) is list:
        rec["what"] = [w[:120] for w in rec["what"][:20] if _type(w) is str]
    while _len(_dumps(rec)) + overhead > ATOMIC_LINE:
        key = None
        for k, v in rec.items():
            if (_type(v) is str or _type(v) is list) and _len(v) > 1 and (key is None or _len(v) > _len(rec[key])):
                key = k
        if key is None:
            break
        rec[key] = rec[key][: _len(rec[key]) // 2]
    return rec


def _short_exc(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()[:MAX_MESSAGE]


def _main(argv):
    cfg = json.loads(argv[0])
    marker = cfg.get("marker", "")
    mode = cfg.get("mode", "visible")
    # A private copy of the original stdout: pytest's fd capture does not reach it.
    out_fd = os.dup(1)
    prefix = "\n\x1e" + marker + " "

    def send(rec):
        data = (prefix + _dumps(rec) + "\n").encode()
        with contextlib.suppress(OSError):
            while data:
                data = data[_write(out_fd, data):]

    def emit(rec):
        # A test's line carries its observations (any length; a spliced one is lost: not passed).
        send(rec if rec.get("k") == "test" else _fit(rec, _len(prefix) + 1))

    progress = send

    gc.disable()  # importing pytest makes objects that all live on: no collection needs to look at them
    import _pytest.config
    import pytest

    for name in _pytest.config.default_plugins:
        with contextlib.suppress(ImportError):
            importlib.import_module("_pytest." + name)
    # What exists by now (the interpreter's, pytest's and this runner's modules) lives until the
    # process ends: frozen out of the collector, each collection (pytest runs five as a session
    # ends) walks only what the session, the workspace and its tests make.
    gc.freeze()
    gc.enable()
    emit({"k": "start", "python": sys.version.split()[0], "pytest": pytest.__version__})
    progress({"p": "start"})

    workspace = os.getcwd()
    shadowed = {}
    for name in cfg.get("shadow_check", []):
        where = None
        if name in sys.builtin_module_names or name in sys.modules:
            where = "built in or already loaded"
        else:
            try:
                spec = importlib.machinery.PathFinder.find_spec(name, [p for p in sys.path if p])
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                where = str(spec.origin or (list(spec.submodule_search_locations or []) or ["?"])[0])
        if where:
            shadowed[name] = where
    if shadowed:
        for name, where in sorted(shadowed.items()):
            emit({"k": "shadow", "name": name, "where": where})
        emit({"k": "end", "exit": None})
        os._exit(0)

    gate = cfg.get("gate")
    if gate:
        # Held here, before any workspace code runs, until the host creates the file `gate`: a
        # held-out phase's workspace code starts only once the visible phase is over.
        progress({"p": "gate"})
        while not os.path.exists(gate):
            time.sleep(GATE_POLL_S)

    integrity = Integrity()
    integrity.take()
    sys.path.append(workspace)
    for mod in cfg.get("modules", []):
        progress({"p": "import", "m": mod})
        try:
            m = importlib.import_module(mod)
            origin = getattr(m, "__file__", None) or ""
            if origin and not os.path.realpath(origin).startswith(workspace + os.sep):
                emit({"k": "import", "module": mod, "error": f"{mod} resolves outside the workspace: {origin}"})
        except BaseException as e:  # noqa: BLE001 - SystemExit at import is a failed import too
            emit({"k": "import", "module": mod, "error": _short_exc(e)})
    progress({"p": "collect"})

    observations = {}
    pending = {}

    class Report:
        """Collects one outcome per test: setup/teardown failures are errors, xfail is kept apart."""

        @pytest.fixture
        def observe(self, request):
            return Observer(observations.setdefault(request.node.nodeid, []))

        def pytest_runtest_logstart(self, nodeid, location):
            progress({"p": "test", "id": nodeid})

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
            rec = pending.setdefault(report.nodeid, {"outcome": None, "message": "", "duration": 0.0})
            rec["duration"] += float(getattr(report, "duration", 0.0) or 0.0)
            if outcome is None:
                return
            if rec["outcome"] in ("failed", "error") and report.when == "teardown":
                return
            rec["outcome"] = outcome
            rec["message"] = "" if outcome == "passed" or report.longrepr is None else str(report.longrepr)[-MAX_MESSAGE:]

        def pytest_runtest_logfinish(self, nodeid, location):
            rec = pending.pop(nodeid, None) or {"outcome": "error", "message": "no report", "duration": 0.0}
            line = {"k": "test", "id": nodeid, "outcome": rec["outcome"] or "error", "message": rec["message"],
                    "duration": round(rec["duration"], 6)}
            if mode == "observe":
                line["obs"] = observations.pop(nodeid, [])
            emit(line)

        def pytest_collection_finish(self, session):
            # Checked after collection (test modules imported) and at the end: a snapshot
            # comparison costs ~20 ms, too much to repeat for every test.
            bad = integrity.changed()
            if bad:
                emit({"k": "tamper", "what": bad})

        def pytest_collectreport(self, report):
            if report.failed:
                emit({"k": "collect", "id": report.nodeid, "message": str(report.longrepr)[-MAX_MESSAGE:]})

    plugin = Report()
    try:
        code = int(pytest.main(list(cfg.get("pytest", [])), plugins=[plugin]))
    except BaseException as e:  # noqa: BLE001 - record and still end the report
        emit({"k": "crash", "message": _short_exc(e)})
        code = -1
    bad = integrity.changed()
    if bad:
        emit({"k": "tamper", "what": bad})
    emit({"k": "end", "exit": code})
    progress({"p": "end"})
    os._exit(0)


if __name__ == "__main__":  # `python3 -c <source>`; imported, it only lends its encoder
    _main(sys.argv[1:])
