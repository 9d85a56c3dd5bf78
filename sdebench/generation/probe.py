"""Generation rule 7: simulate the prober, the best memoryless searcher, against the grader.

For one family variant every candidate of the fact space is rendered (the code a perfect agent who
believed it would write) and all of them run the task's observation tests in **one** sandboxed
process (`DRIVER`: write the candidate's files, forget the workspace's modules, import the test
modules afresh, call every test with the runner's own `observe` fixture). The modules no candidate
can reach (`stable_modules`: by their static imports) are imported once and kept, put back as
imported after each run; a change the driver sees in their state drops them for the rest. The grader compares a
submission's observations with the oracle's; the oracle of hypothesis h is h's rendering, so one
run per candidate gives the feedback any candidate c would get if h were the fact, under every
feedback policy, with the grading's own comparison (`observations_match`).

The prober (`Prober`) keeps the hypotheses consistent with all feedback so far and submits the
candidate whose resolving is most probable under the prior restricted to them; the simulation
replays it for every value of the family's draw, which gives the resolve probability exactly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sdebench.errors import GenerationError
from sdebench.generation.facts import FactSpace
from sdebench.grading.options import POLICIES
from sdebench.grading.rules import FLOAT_ABS, FLOAT_REL, observations_match
from sdebench.grading.testrun import runner_source

LIMIT = 0.05  # rule 7: the prober resolves with probability at most 5 %
CONFIG = ".probe/candidates.json"
REPORT = ".probe/report.jsonl"

# Runs inside the sandbox as `python3 -I -B -c DRIVER CONFIG`; stdlib + pytest + the runner's encoder.
DRIVER = r'''
import collections, copy, importlib, importlib.machinery, importlib.util, itertools, json, os, sys
runner = {"__name__": "sdebench_runner"}
exec(compile(RUNNER, "runner", "exec"), runner)
Observer = runner["Observer"]
sys.dont_write_bytecode = True
ws = os.path.abspath(os.getcwd())
sys.path.append(ws)
import pytest  # noqa: E401 - the tests use pytest.mark and pytest.raises
cfg = json.load(open(sys.argv[1]))
out = open(cfg["report"], "w")

def instances(fn):
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    axes = []
    for m in reversed(marks):
        names = m.args[0]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = []
        for v in m.args[1]:
            v = tuple(v.values) if hasattr(v, "values") and not isinstance(v, dict) else (v if len(names) > 1 else (v,))
            rows.append(dict(zip(names, v)))
        axes.append(rows)
    if not axes:
        return [("", {})]
    out_ = []
    for k, combo in enumerate(itertools.product(*axes)):
        args = {}
        for part in combo:
            args.update(part)
        out_.append((f"[{k}]", args))
    return out_

# Compiled code is cached by (path, source): the same text compiles to the same code, and every
# candidate still executes fresh modules; a file is rewritten only when its text changes.
codes = {}


class Loader(importlib.machinery.SourceFileLoader):
    def source_to_code(self, data, path, *, _optimize=-1):
        key = (path, bytes(data))
        code = codes.get(key)
        if code is None:
            code = codes[key] = compile(data, path, "exec", dont_inherit=True, optimize=_optimize)
        return code


def precompile(path):
    try:
        with open(path, "rb") as f:
            Loader("", path).source_to_code(f.read(), path)
    except BaseException:  # a file that does not compile fails where it is imported
        pass


details = [(importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
           (Loader, importlib.machinery.SOURCE_SUFFIXES),
           (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES)]
ws_hook = importlib.machinery.FileFinder.path_hook(*details)


def hook(path):
    full = os.path.abspath(path or ".")
    if full != ws and not full.startswith(ws + os.sep):
        raise ImportError("not the workspace")
    return ws_hook(path)


sys.path_hooks.insert(0, hook)
sys.path_importer_cache.clear()
# The modules no candidate can change (the host's static import graph) are imported once, here, and
# kept; a candidate's run starts from their state as imported (their globals are put back after each
# run; any other change seen in them, a mutated container or class, an instance's attributes, a
# default argument, a cache, makes the next candidates import everything afresh, as without them).
for name in cfg["preload"]:
    try:
        importlib.import_module(name)
    except BaseException:  # it fails again, the same way, where a test imports it
        sys.modules.pop(name, None)
kept = {n: m for n, m in sys.modules.items() if n.split(".")[0] in cfg["tops"]}
globals_of = {n: dict(vars(m)) for n, m in kept.items()}
ATOMS = (type(None), bool, int, float, complex, str, bytes)
watched, defaults, caches = [], [], []  # (live object, its contents as imported), ...


def watch(value, depth, seen):
    """Record every mutable object reachable from a kept module (containers, the workspace's
    classes, instances and functions) with a copy of its contents, to compare after each run."""
    t = type(value)
    if t in ATOMS or depth > 8 or id(value) in seen or t is type(sys):
        return
    seen.add(id(value))
    down = depth + 1
    if isinstance(value, dict):
        watched.append((value, copy.copy(value)))
        for v in list(value.values()):
            watch(v, down, seen)
        return
    if isinstance(value, (list, tuple, bytearray, set, frozenset, collections.deque)):
        if not isinstance(value, (tuple, frozenset)):
            watched.append((value, copy.copy(value)))
        for v in list(value):
            watch(v, down, seen)
        return
    if t.__module__ == "functools" and callable(getattr(value, "cache_info", None)):
        caches.append((value, value.cache_info().currsize))
        return
    owner = getattr(value, "__module__", None) if isinstance(value, type) or t.__name__ == "function" else t.__module__
    if owner not in kept:  # the standard library's and site-packages' objects are not the workspace's state
        return
    if t.__name__ == "function":
        defaults.append((value, value.__defaults__, value.__kwdefaults__))
        watch(value.__defaults__, down, seen)
        watch(value.__kwdefaults__, down, seen)
    d = getattr(value, "__dict__", None)
    if isinstance(value, type):
        watched.append((d, dict(d)))
        for v in list(d.values()):
            watch(v, down, seen)
    elif isinstance(d, dict):
        watch(d, down, seen)


def unchanged():
    return (all(live == was for live, was in watched) and all(
        f.__defaults__ is a and f.__kwdefaults__ is b for f, a, b in defaults)
        and all(c.cache_info().currsize == n for c, n in caches))


seen_ids = set()
for n, g in globals_of.items():
    for k, v in g.items():
        if not k.startswith("__"):  # dunders (the import system's own) are only put back
            watch(v, 0, seen_ids)
for path, _ in cfg["tests"]:
    precompile(os.path.join(ws, path))


def run_tests():
    res = {}
    for n, (path, names) in enumerate(cfg["tests"]):
        try:
            full = os.path.join(ws, path)
            spec = importlib.util.spec_from_file_location(f"sdebench_probe_{n}", full,
                                                          loader=Loader(f"sdebench_probe_{n}", full))
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
        except BaseException as e:
            for name in names:
                res[f"{path}::{name}"] = ["error", "[]"]
            continue
        for name in names:
            fn = getattr(mod, name, None)
            for suffix, args in (instances(fn) if fn else [("", {})]):
                sink = []
                try:
                    fn(**args, observe=Observer(sink))
                    outcome = "passed"
                except BaseException as e:
                    outcome = "failed"
                res[f"{path}::{name}{suffix}"] = [outcome, json.dumps(sink)]
    return res


seen = {}  # instance -> observation text -> id (an observation list is sent once)
for idx, files in enumerate(cfg["candidates"]):
    created = False
    for rel, text in files.items():
        p = os.path.join(ws, rel)
        try:
            f = open(p, "r+")
        except FileNotFoundError:
            created = True
            with open(p, "w") as f:
                f.write(text)
            continue
        # Overwritten in place, not truncated to empty first (which makes ext4 flush the file).
        with f:
            if f.read() != text:
                f.seek(0)
                f.write(text)
                f.truncate()
    if created:
        importlib.invalidate_caches()
    for rel in files:
        if rel.endswith(".py"):
            precompile(os.path.join(ws, rel))
    for name in list(sys.modules):
        if (name.split(".")[0] in cfg["tops"] and name not in kept) or name.startswith("sdebench_probe_"):
            del sys.modules[name]
    got = run_tests()
    for n, m in kept.items():  # rebound or added globals (a submodule imported by the run) go
        g = vars(m)
        g.clear()
        g.update(globals_of[n])
    if kept and not unchanged():
        for n in kept:
            sys.modules.pop(n, None)
        kept = {}
    res, new = {}, {}
    for inst, (outcome, text) in got.items():
        ids = seen.setdefault(inst, {})
        if text not in ids:
            ids[text] = len(ids)
            new.setdefault(inst, []).append(f"{json.dumps(str(ids[text]))}: {text}")
        res[inst] = [outcome, ids[text]]
    # {"i": .., "r": .., "new": {instance: {id: observations}}}, the texts already encoded once.
    out.write(json.dumps({"i": idx, "r": res})[:-1] + ', "new": {' + ", ".join(
        f"{json.dumps(inst)}: {{{', '.join(parts)}}}" for inst, parts in new.items()) + "}}\n")
    out.flush()
out.close()
'''

# Names that may make a module's imports, or what it reads, invisible to its static import graph.
DYNAMIC = frozenset({"__import__", "import_module", "exec", "eval", "reload", "find_spec", "spec_from_file_location",
                     "walk_packages", "iter_modules", "run_module", "run_path", "modules", "__path__", "__file__",
                     "open", "read_text", "read_bytes", "getsource", "linecache"})


def module_name(rel: str) -> str | None:
    """The dotted import name of a workspace .py file (None: not importable by name)."""
    if not rel.endswith(".py"):
        return None
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _imports(name: str, is_pkg: bool, src: str) -> set[str] | None:
    """Every dotted name a module's import statements may load (None: a dynamic import or read)."""
    import ast

    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    out: set[str] = set()
    package = name if is_pkg else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DYNAMIC or isinstance(node, ast.Attribute) and node.attr in DYNAMIC:
            return None
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".") if package else []
                if node.level - 1 > len(up):
                    return None
                up = up[:len(up) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            out.add(base)
            out.update(f"{base}.{a.name}" if base else a.name for a in node.names)
    return {p for full in out if full for p in _prefixes(full)}


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts) + 1)]


def stable_modules(tree: Mapping[str, str], changing: set[str]) -> list[str]:
    """The workspace modules whose import cannot depend on any file in `changing`: none of them is
    reached through their static imports (their packages included), and they import nothing dynamically."""
    names = {n: rel for rel in tree if (n := module_name(rel))}
    changing_names = {module_name(rel) for rel in changing} - {None}
    deps: dict[str, set[str] | None] = {}
    for n, rel in names.items():
        got = _imports(n, rel.endswith("__init__.py"), tree[rel])
        deps[n] = None if got is None else ({p for p in got if p in names or p in changing_names}
                                            | set(_prefixes(n)[:-1])) - {n}
    unstable = {n for n, d in deps.items() if d is None} | changing_names
    grew = True
    while grew:
        grew = False
        for n, d in deps.items():
            if n not in unstable and d & unstable:
                unstable.add(n)
                grew = True
    return sorted(n for n in names if n not in unstable)


class ProbeError(GenerationError, RuntimeError):
    """The candidates could not be run (a sandbox or driver failure): an error, not a verdict."""


def driver_source() -> str:
    """The driver with the runner's source bound in."""
    return f"RUNNER = {runner_source()!r}\n" + DRIVER


def run_candidates(factory, root: Path, head: Mapping[str, str], renders: Sequence[Mapping[str, str]],
                   tests: Mapping[str, str], timeout: float = 600.0) -> list[dict[str, tuple]]:
    """Observations (outcome, [encoded values]) per test instance for every rendered candidate,
    from one sandboxed process over `head` with the observation `tests` added."""
    import ast

    from sdebench.grading.rules import top_level_names

    touched = sorted({p for r in renders for p in r})
    cands = [{p: r.get(p, head.get(p, "")) for p in touched} for r in renders]
    tree = {**head, **tests}
    for rel, content in tree.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    listing = []
    for path, src in sorted(tests.items()):
        names = [n.name for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
        listing.append([path, names])
    (root / CONFIG).parent.mkdir(parents=True, exist_ok=True)
    # Test files and anything outside .py are never preloaded: a candidate could change a read file.
    changing = set(touched) | set(tests)
    preload = stable_modules(tree, changing) if all(p.endswith(".py") for p in touched) else []
    (root / CONFIG).write_text(json.dumps({"candidates": cands, "tests": listing, "preload": preload,
                                           "tops": sorted(top_level_names(tree)), "report": REPORT}))
    with factory.open(root) as sb:
        ex = sb.exec(["python3", "-I", "-B", "-c", driver_source(), CONFIG], timeout=timeout)
        try:
            raw = sb.read_file(REPORT)
        except Exception:  # noqa: BLE001 - a missing report is reported below
            raw = ""
    rows = [json.loads(line) for line in raw.splitlines() if line.strip()]
    if len(rows) != len(cands):
        tail = (ex.stderr.strip().splitlines() or [""])[-1][:300]
        raise ProbeError(f"the candidate run reported {len(rows)} of {len(cands)} candidates (exit {ex.exit_code}): {tail}")
    return decode_rows(rows)


def decode_rows(rows: Sequence[dict]) -> list[dict[str, tuple]]:
    """The runs of the driver's report lines: an observation list is sent once per instance and
    then named by its id, so equal observations are one (shared) list object here."""
    known: dict[str, dict[str, list]] = {}
    runs = []
    for row in rows:
        for inst, fresh in row.get("new", {}).items():
            known.setdefault(inst, {}).update(fresh)
        runs.append({k: (v[0], known[k][str(v[1])]) for k, v in row["r"].items()})
    return runs


# --- the feedback model -------------------------------------------------------------------------


def _base(instance: str) -> str:
    return instance.split("[", 1)[0]


@dataclass
class Model:
    """Behaviour classes of the admissible candidates and the feedback one gets against another.

    Every class passes every test instance of its own run (`build_model` admits no other), which
    the comparisons below rely on; observations are interned as small ids per test instance, so
    two classes are compared on the instances where their ids differ only."""

    hidden: list[str]  # hidden base ids
    visible: list[str]  # visible base ids
    members: list[list[int]]  # class -> candidate indices (declaration order)
    mass: list[float]  # class -> prior mass
    runs: list[dict[str, tuple]]  # class -> its representative's observations
    inadmissible: list[int] = field(default_factory=list)  # candidates failing a visible test or their own run
    _match: dict = field(default_factory=dict)
    _ids: dict = field(default_factory=dict)
    _obs: dict = field(default_factory=dict)
    _tolerant: dict = field(default_factory=dict)
    _texts: dict = field(default_factory=dict)  # id(observation list) -> (the list, its JSON text)
    enc: list = field(default_factory=list)
    _items: list = field(default_factory=list)  # class -> {(instance, outcome, id)}
    _unpassed: list = field(default_factory=list)  # class -> instances not passed
    _fails: dict = field(default_factory=dict)  # class c -> failing(c, h) for every class h
    _groups: dict = field(default_factory=dict)  # instance -> observation id -> classes reporting it
    _resolves: dict | None = None
    _rows: dict = field(default_factory=dict)

    def _text(self, obs: list) -> str:
        hit = self._texts.get(id(obs))
        if hit is None or hit[0] is not obs:  # the list is kept alive with its text, so ids stay unique
            hit = self._texts[id(obs)] = (obs, json.dumps(obs))
        return hit[1]

    def _id(self, inst: str, obs: list) -> int:
        text = self._text(obs)
        ids = self._ids.setdefault(inst, {})
        if text not in ids:
            ids[text] = len(ids)
            self._obs[(inst, ids[text])] = obs
            self._tolerant[(inst, ids[text])] = '"float"' in text or '"Decimal"' in text
        return ids[text]

    def _ok(self, inst: str, h: int, c: int) -> bool:
        if self.enc[c][inst][0] != "passed":
            return False
        a, b = self.enc[h][inst][1], self.enc[c][inst][1]
        if a == b:
            return True
        if not (self._tolerant[(inst, a)] or self._tolerant[(inst, b)]):
            return False  # exact encodings without floats or decimals match only when equal
        return self._matches(inst, a, b)

    def index(self) -> None:
        """Intern every observation list as a small id per test instance."""
        self.enc = [{i: (o, self._id(i, obs)) for i, (o, obs) in run.items()} for run in self.runs]
        self._items = [{(i, o, v) for i, (o, v) in enc.items()} for enc in self.enc]
        self._unpassed = [{i for i, (o, _) in enc.items() if o != "passed"} for enc in self.enc]
        self._fails.clear()
        self._groups.clear()
        self._resolves = None
        self._rows.clear()

    def failing(self, c: int, h: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(hidden, re-checked visible) base ids that class c's code fails if class h holds the fact."""
        exp, got = self.enc[h], self.enc[c]
        # An instance both report with the same outcome and observations, passed, is fine: only the
        # instances in the two sets' difference (or not passed) need a look.
        suspects = {i for i, _, _ in self._items[h] ^ self._items[c]} | self._unpassed[c]
        bad = {_base(i) for i in suspects if i not in exp or i not in got or not self._ok(i, h, c)}
        return tuple(b for b in self.hidden if b in bad), tuple(b for b in self.visible if b in bad)

    def failures(self, c: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """failing(c, h) for every class h (computed once per submitted class): per test instance,
        the classes are grouped by their observations there, and each group is judged once."""
        if c not in self._fails:
            n = len(self.runs)
            if not self._groups:
                for h, enc in enumerate(self.enc):
                    for i, (_, v) in enc.items():
                        self._groups.setdefault(i, {}).setdefault(v, []).append(h)
            got = self.enc[c]
            bad: list[set[str]] = [set() for _ in range(n)]
            for i, groups in self._groups.items():
                b = _base(i)
                mine = got.get(i)
                judged = []
                for v, hs in groups.items():
                    judged.extend(hs)
                    if mine is not None and mine[0] == "passed" and (
                            v == mine[1] or (self._tolerant[(i, v)] or self._tolerant[(i, mine[1])])
                            and self._matches(i, v, mine[1])):
                        continue
                    for h in hs:
                        bad[h].add(b)
                if mine is not None and len(judged) < n:  # the classes without the instance fail it
                    have = set(judged)
                    for h in range(n):
                        if h not in have:
                            bad[h].add(b)
            self._fails[c] = [(tuple(x for x in self.hidden if x in bh), tuple(x for x in self.visible if x in bh))
                              for bh in bad]
        return self._fails[c]

    def _matches(self, inst: str, a: int, b: int) -> bool:
        """Whether observations b match the expected a (tolerant comparison, cached)."""
        key = (inst, a, b)
        if key not in self._match:
            self._match[key] = observations_match(self._obs[(inst, a)], self._obs[(inst, b)])
        return self._match[key]

    def resolvers(self, c: int) -> list[int]:
        """The classes h under which submitting class c resolves (c itself, and near-equal floats)."""
        if self._resolves is None:
            tolerant = {i for (i, k), t in self._tolerant.items() if t}
            relevant = set(self.hidden) | set(self.visible)
            buckets: dict[tuple, list[int]] = {}
            for h, enc in enumerate(self.enc):
                key = tuple(sorted((i, o, v) for i, (o, v) in enc.items() if i not in tolerant))
                # Tolerant observations can only match with the same skeleton (see `skeleton`).
                shape = tuple(sorted((i, self._skeleton(i, v)) for i, (_, v) in enc.items()
                                     if i in tolerant and _base(i) in relevant))
                buckets.setdefault((key, shape), []).append(h)
            self._resolves = {}
            for members in buckets.values():
                near = self._near(members, sorted(i for i in tolerant if _base(i) in relevant))
                for x in members:
                    self._resolves[x] = [h for h in members if h == x or (h in near[x] and not any(self.failing(x, h)))]
        return self._resolves[c]

    def _near(self, members: list[int], insts: list[str]) -> dict[int, set[int]]:
        """For each member x, a superset of the members whose floats all lie within the grading's
        tolerance of x's (one coordinate, the most varied, sorted and searched): every other pair
        fails the comparison, which is then left undone. Members share their skeleton."""
        import bisect
        import math

        everyone = {x: set(members) for x in members}
        if len(members) < 8:
            return everyone
        vecs = {}
        for h in members:
            key = ("floats", *(self.enc[h][i][1] for i in insts))
            if key not in self._match:
                self._match[key] = [float(v) for i in insts for v in _floats(self._obs[(i, self.enc[h][i][1])])]
            vecs[h] = self._match[key]
        width = {len(v) for v in vecs.values()}
        if len(width) != 1 or not (n := width.pop()) or not all(math.isfinite(f) for v in vecs.values() for f in v):
            return everyone
        k = max(range(n), key=lambda j: len({v[j] for v in vecs.values()}))
        order = sorted(members, key=lambda h: vecs[h][k])
        keys = [vecs[h][k] for h in order]
        out = {}
        for x in members:
            a = vecs[x][k]
            # |a - b| <= max(REL * |b|, ABS) implies |a - b| <= max(REL * |a| / (1 - REL), ABS).
            w = max(FLOAT_REL * abs(a) / (1 - FLOAT_REL), FLOAT_ABS) * (1 + 1e-6) + 1e-300
            lo, hi = bisect.bisect_left(keys, a - w), bisect.bisect_right(keys, a + w)
            out[x] = set(order[max(0, lo - 1):hi + 1])
        return out

    def _skeleton(self, inst: str, v: int):
        key = ("skeleton", inst, v)
        if key not in self._match:
            self._match[key] = skeleton(self._obs[(inst, v)])
        return self._match[key]

    def row(self, c: int, policy: str) -> list:
        """The feedback signature class c's submit gets against every class, under `policy`."""
        key = (c, policy)
        if key not in self._rows:
            self._rows[key] = [signature(policy, *f) for f in self.failures(c)]
        return self._rows[key]


def _floats(value):
    """Every float of an encoded observation list, in order (the runner's encodings)."""
    if isinstance(value, list):
        if len(value) == 2 and value[0] == "float":
            yield value[1]
            return
        for v in value:
            yield from _floats(v)


def skeleton(obs) -> str:
    """What two observation lists that `observations_match` must share: the structure and every
    exact atom, each float blanked and each Decimal reduced to its value (the runner's encodings)."""
    return json.dumps([_shape(v) for v in obs] if isinstance(obs, list) else obs)


def _shape(value):
    if not isinstance(value, list) or len(value) != 2:
        return value
    tag, payload = value
    if tag == "float":
        return ["float"]
    if tag == "Decimal":
        return ["Decimal", _decimal_key(payload)]
    if tag in ("list", "tuple", "set", "frozenset") and isinstance(payload, list):
        return [tag, [_shape(v) for v in payload]]
    if tag == "dict" and isinstance(payload, list):
        return [tag, [[p[0], _shape(p[1])] if isinstance(p, list) and len(p) == 2 else p for p in payload]]
    return value


def _decimal_key(text) -> str:
    """A key equal for Decimals equal by value (NaNs: by their text, as the comparison wants)."""
    from decimal import Decimal, InvalidOperation

    try:
        d = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return f"bad:{text}"
    if d.is_nan():
        return f"nan:{text}"
    if d.is_infinite():
        return str(d)
    if not d:
        return "0"
    sign, digits, exp = d.as_tuple()
    digits = list(digits)
    while digits and digits[-1] == 0:
        digits.pop()
        exp += 1
    return f"{'-' if sign else ''}{''.join(map(str, digits))}e{exp}"


def signature(policy: str, hidden_failed: Sequence[str], recheck_failed: Sequence[str]):
    """What the feedback under `policy` reveals about the held-out phase (None: resolved)."""
    if not hidden_failed and not recheck_failed:
        return None
    if policy == "binary":
        return "fail"
    if policy == "counts":
        return (len(hidden_failed), len(recheck_failed))
    return (tuple(sorted(hidden_failed)), tuple(sorted(recheck_failed)))


def build_model(space: FactSpace, runs: Sequence[dict[str, tuple]], hidden: Sequence[str],
                visible: Sequence[str]) -> Model:
    """Group admissible candidates (every test instance passes, visible checks hold) by behaviour."""
    prior = [w for _, w in space.candidates]
    classes: dict[tuple, int] = {}
    model = Model(list(hidden), list(visible), [], [], [])
    shown = set(visible)
    checked: dict[int, bool] = {}  # id(observation list) -> its checks hold (lists live in `runs`)

    def checks_hold(obs: list) -> bool:
        if id(obs) not in checked:
            checked[id(obs)] = all(v[1] is True for v in obs if isinstance(v, list) and v[:1] == ["check"])
        return checked[id(obs)]

    for i, run in enumerate(runs):
        ok = bool(run) and all(o == "passed" for o, _ in run.values())
        ok = ok and all(checks_hold(obs) for i_, (_, obs) in run.items() if _base(i_) in shown)
        if not ok:
            model.inadmissible.append(i)
            continue
        # Same instances, outcomes and observation texts: the same behaviour.
        key = tuple(sorted((inst, o, model._id(inst, obs)) for inst, (o, obs) in run.items()))
        if key not in classes:
            classes[key] = len(model.runs)
            model.runs.append(run)
            model.members.append([])
            model.mass.append(0.0)
        k = classes[key]
        model.members[k].append(i)
        model.mass[k] += prior[i]
    model.index()
    return model


class Prober:
    """The best memoryless searcher over a feedback model: posterior = prior over consistent classes."""

    def __init__(self, model: Model, policy: str, alive: Sequence[int] | None = None):
        self.model, self.policy = model, policy
        self.alive = list(range(len(model.runs))) if alive is None else list(alive)

    def next(self) -> int | None:
        """The class to submit: the most probable resolving submit (ties: declared first)."""
        if not self.alive:
            return None
        best, best_p = None, -1.0
        alive = set(self.alive)
        for c in self.alive:
            p = sum(self.model.mass[h] for h in self.model.resolvers(c) if h in alive)
            if p > best_p + 1e-12:
                best, best_p = c, p
        return best

    def observe(self, c: int, sig) -> None:
        """Drop the hypotheses under which submitting c would not have given `sig`."""
        row = self.model.row(c, self.policy)
        self.alive = [h for h in self.alive if row[h] == sig]


def submits_to_resolve(model: Model, truth: int, policy: str, submits: int) -> int | None:
    """The submit (1-based) at which the prober resolves when class `truth` holds the fact, or None."""
    p = Prober(model, policy)
    for n in range(1, submits + 1):
        c = p.next()
        if c is None:
            return None
        sig = model.row(c, policy)[truth]
        if sig is None:
            return n
        p.observe(c, sig)
    return None


def resolve_submits(model: Model, truths: Sequence[int], policy: str, submits: int) -> dict[int, int | None]:
    """`submits_to_resolve` for every class in `truths` at once. The prober is deterministic given
    the feedback so far, so its replays form a tree: the truths that got the same feedback share
    the next submit, and each node is searched once instead of once per truth."""
    out: dict[int, int | None] = {}

    def walk(alive: list[int], group: list[int], n: int) -> None:
        c = Prober(model, policy, alive).next() if n <= submits else None
        if c is None:
            out.update(dict.fromkeys(group))
            return
        row = model.row(c, policy)
        by_sig: dict = {}
        for t in group:
            by_sig.setdefault(row[t], []).append(t)
        for sig, ts in by_sig.items():
            if sig is None:
                out.update(dict.fromkeys(ts, n))
            else:
                walk([h for h in alive if row[h] == sig], ts, n + 1)

    walk(list(range(len(model.runs))), list(dict.fromkeys(truths)), 1)
    return out


# --- the rule ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReaderSpace:
    """What rule 8 needs of one family variant, from the probe's runs: each candidate's spellings
    (`Family.spellings`) and the candidates whose fix resolves when the variant's fact holds."""

    values: tuple
    spellings: tuple[tuple[str, ...], ...]
    resolving: frozenset[int]  # indices into `values`
    problem: str | None = None  # why the readers cannot be judged (the spellings failed), else None


@dataclass
class ProbeResult:
    """The rule-7 figures of one family variant (and the candidates' data rule 8 judges readers by)."""

    family: str
    variant: int
    size: int  # candidates declared
    classes: int  # behaviourally distinct admissible candidates
    submits: int  # the cap: first submit + interventions
    fact: str  # repr of this variant's fact (kept on the host, never in a task)
    resolve: dict[str, float] = field(default_factory=dict)  # policy -> P(resolve within the cap) over the draw
    fact_submit: dict[str, int | None] = field(default_factory=dict)  # policy -> submit resolving this variant's fact
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    readers: ReaderSpace | None = None  # None: the probe did not get that far

    def violations(self) -> list[str]:
        """Rule-7 failures under the default (binary) policy, plus any inconsistency met."""
        out = list(self.problems)
        if self.fact_submit.get("binary") is not None:
            out.append(f"the prober reaches the fact without memory at submit {self.fact_submit['binary']} "
                       f"of {self.submits} (binary feedback)")
        if self.resolve.get("binary", 0.0) > LIMIT:
            out.append(f"the prober resolves {self.resolve['binary']:.1%} of the family's draws within "
                       f"{self.submits} submits (binary feedback; at most {LIMIT:.0%} allowed; space {self.size})")
        return out

    def summary(self) -> str:
        """One line of figures."""
        figs = ", ".join(f"{p} {self.resolve.get(p, float('nan')):.2%}" for p in POLICIES)
        return (f"{self.family} v{self.variant}: space {self.size} ({self.classes} distinct), "
                f"P(resolve in {self.submits}) {figs}")


def analyse(family: str, variant: int, space: FactSpace, fact: object, runs: Sequence[dict[str, tuple]],
            hidden: Sequence[str], visible: Sequence[str], submits: int) -> ProbeResult:
    """The figures from the candidates' runs (index-aligned with `space.candidates`)."""
    return analyse_model(family, variant, space, fact, build_model(space, runs, hidden, visible), submits)


def analyse_model(family: str, variant: int, space: FactSpace, fact: object, model: Model,
                  submits: int) -> ProbeResult:
    """The figures of a built model."""
    res = ProbeResult(family, variant, space.size, 0, submits, repr(fact))
    values = space.values()
    res.classes = len(model.runs)
    cls_of = {i: k for k, ms in enumerate(model.members) for i in ms}
    if fact not in values:
        res.problems.append(f"the variant's fact {fact!r} is not in the declared space")
    elif values.index(fact) not in cls_of:
        res.problems.append(f"the rendering of the variant's fact {fact!r} fails its own tests in the probe")
    if missing := space.outside_draw():
        res.problems.append(f"the family's draw produces values outside its space: {missing[:3]}")
    first = {v: n for n, v in enumerate(values)}

    def cls(value) -> int | None:
        try:
            return cls_of.get(first[value]) if value in first else None
        except TypeError:  # an unhashable value is no candidate
            return None

    truths = [k for k in map(cls, [v for v, _ in space.draw] + [fact]) if k is not None]
    for policy in POLICIES:
        at = resolve_submits(model, truths, policy, submits)
        res.resolve[policy] = sum(p for v, p in space.draw if cls(v) is not None and at[cls(v)] is not None)
        res.fact_submit[policy] = at[cls(fact)] if cls(fact) is not None else None
    undrawable = [v for v, _ in space.draw if v in values and values.index(v) not in cls_of]
    if undrawable:
        res.problems.append(f"drawable facts whose rendering fails its own tests: {undrawable[:3]}")
    return res


# --- a family variant ------------------------------------------------------------------------------

DEFAULT_SUBMITS = 6  # the first submit and the default cap of 5 interventions


def declares_space(gen) -> bool:
    """Whether a family declares its fact space (`space`, `fact(variant)`, `build(..., fact=)`)."""
    return getattr(gen, "space", None) is not None and callable(getattr(gen, "fact", None))


def render(gen, variant: int, value: object) -> dict[str, str]:
    """The files a perfect agent believing `value` would write: the family's renderer, else its oracle."""
    if callable(getattr(gen, "render", None)):
        return dict(gen.render(variant, value))
    return dict(gen.build(variant, "none", fact=value).oracle_files)


@dataclass
class VariantModel:
    """What the prober knows of one family variant: the space, each candidate's files, the model."""

    space: FactSpace
    renders: list[dict[str, str]]
    model: Model
    seconds: float


def variant_model(gen, variant: int, sandbox_cfg: dict, work: Path | None = None,
                  head: Mapping[str, str] | None = None, spec=None) -> VariantModel:
    """Render and run every candidate of a family variant over `head` (default: the HEAD built with
    the first candidate; filler may differ, code under test does not); the fact is not used.
    `spec`: the variant already built with the first candidate (built here if not given)."""
    from sdebench.generation.observe import ObservationTests
    from sdebench.generation.spec import visible_files
    from sdebench.generation.validate import head_tree
    from sdebench.sandbox import make_factory
    from sdebench.sandbox.scratch import scratch_dir

    start = time.monotonic()
    space = gen.space
    # The repo and its tests are the same whichever candidate holds (held-out tests keep inputs only).
    if spec is None:
        spec = gen.build(variant, "none", fact=space.values()[0])
    head = dict(head) if head is not None else head_tree(spec)
    tests = ObservationTests.of(visible_files(spec, head), spec.hidden_tests)
    renders = [render(gen, variant, v) for v in space.values()]
    with scratch_dir(f"sdebench-probe-{gen.family}-") as tmp:
        runs = run_candidates(make_factory(sandbox_cfg), Path(work or tmp), head, renders, tests.overlay())
    model = build_model(space, runs, spec.hidden_to_pass, spec.fail_to_pass + spec.pass_to_pass)
    return VariantModel(space, renders, model, time.monotonic() - start)


def _independent(spec, other) -> list[str]:
    """What the prober's view (built with another candidate) differs in from the task: nothing may."""
    from sdebench.generation.observe import ObservationTests
    from sdebench.generation.spec import visible_files
    from sdebench.generation.validate import head_tree

    out = []
    a, b = head_tree(spec), head_tree(other)
    if ObservationTests.of(visible_files(spec, a), spec.hidden_tests).overlay() != \
            ObservationTests.of(visible_files(other, b), other.hidden_tests).overlay():
        out.append("the observation tests depend on the fact")
    return out


def probe_family(gen, variant: int, sandbox_cfg: dict, submits: int = DEFAULT_SUBMITS,
                 work: Path | None = None, scale=None) -> ProbeResult:
    """Rule-7 figures of one variant of a family declaring its space (never raises a ProbeError).
    `scale` (sdebench.generation.scale): probe the repo as the scaled tasks carry it."""
    from sdebench.generation.scale import LEVELS, enlarge
    from sdebench.generation.validate import head_tree

    scale = scale or LEVELS["default"]
    space, fact = gen.space, gen.fact(variant)
    start = time.monotonic()
    problems = []
    # The candidates run over the very HEAD the tasks ship, filler of a scaled history included.
    spec = enlarge(gen.build(variant, "none"), scale, gen)
    if fact in space.values() and render(gen, variant, fact) != dict(spec.oracle_files):
        problems.append("the renderer's files for the variant's fact differ from the oracle fix")
    first = enlarge(gen.build(variant, "none", fact=space.values()[0]), scale, gen)
    problems += _independent(spec, first)
    try:
        vm = variant_model(gen, variant, sandbox_cfg, work, head=head_tree(spec), spec=first)
    except ProbeError as e:
        return ProbeResult(gen.family, variant, space.size, 0, submits, repr(fact), problems=[*problems, str(e)])
    res = analyse_model(gen.family, variant, space, fact, vm.model, submits)
    res.problems[:0] = problems
    res.readers = reader_space(gen, variant, space, fact, vm.model)
    res.seconds = time.monotonic() - start
    return res


def spellings_of(gen, variant: int, value: object) -> tuple[str, ...]:
    """How a candidate is written in memory text: the family's `spellings`, else the fact tokens of
    the variant built with it."""
    if callable(getattr(gen, "spellings", None)):
        return tuple(gen.spellings(variant, value))
    return tuple(gen.build(variant, "none", fact=value).fact_tokens)


def reader_space(gen, variant: int, space: FactSpace, fact: object, model: Model) -> ReaderSpace:
    """The candidates' spellings and the ones that resolve under the variant's fact (rule 8's judge:
    the grader's comparison of each candidate's observations with the fact's); never raises."""
    values = space.values()
    resolving: set[int] = set()
    at = next((i for i, v in enumerate(values) if v == fact), None)
    truth = next((k for k, ms in enumerate(model.members) if at in ms), None)
    if truth is not None:
        for k, ms in enumerate(model.members):
            if not any(model.failing(k, truth)):
                resolving.update(ms)
    try:
        spelled = tuple(spellings_of(gen, variant, v) for v in values)
    except Exception as e:  # noqa: BLE001 - a family that cannot spell a candidate is reported by rule 8
        return ReaderSpace(tuple(values), (), frozenset(resolving), f"the candidates cannot be spelled: "
                                                                     f"{type(e).__name__}: {e}")
    return ReaderSpace(tuple(values), spelled, frozenset(resolving))
