"""Observation tests: the mechanical rewrite of assert-style tests into tests that only observe.

A family writes its tests with ordinary asserts. For phase 2 of grading (the hidden phase) every
test becomes an *observation test*: it calls the code and hands values to the runner's `observe`
fixture; the host compares them with the values recorded from the oracle fix at generation.

Two rewrites, one per kind of test:

- `hidden` (the held-out tests): the expected side of every assertion is dropped, so the file
  holds inputs only. `assert A == B` with B a literal (constants, containers of them, calls of
  value constructors like `Decimal("1.20")`, `pytest.approx(...)`) becomes `observe(A)`; a
  computed B is observed too. Other comparisons observe their non-literal operands, `assert X`
  and `assert not X` observe X. `with pytest.raises(E):` becomes `with observe.raises():`
  (the exact exception type is observed, E is dropped).
- `visible` (the visible tests, re-checked in phase 2): the assertion is kept whole and judged
  inside on plain data only: `assert A < B` becomes `observe.compare(A, "<", B)`, `assert X`
  becomes `observe.truth(X)` and `assert not X` `observe.truth(X, False)`; the runner records
  whether the assertion holds, or a mismatch if an operand is not plain data (so an object whose
  `==` always says yes gains nothing).

A test may also call `observe(value)` itself (where an expected value is awkward to write down);
those calls are kept. Asserts outside test functions cannot be rewritten (there is no `observe` there): a TransformError
names them. Comments and layout are not kept (the text is regenerated from the syntax tree).
"""

from __future__ import annotations

import ast
import datetime
import json
import math
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from sdebench.errors import GenerationError
from sdebench.grading.rules import is_plain_encoding, module_names
from sdebench.grading.testrun import TestRun, run_tests
from sdebench.tasks.record import EXPECTED, HIDDEN_DIR, OBSERVED_DIR

MODES = ("hidden", "visible")
FIXTURE = "observe"
# Calls whose result counts as a literal when every argument is one.
LITERAL_CALLS = frozenset({"Decimal", "date", "datetime", "time", "timedelta", "Fraction", "set", "frozenset",
                           "tuple", "list", "dict", "float", "int", "str", "bytes", "approx"})
OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is",
       ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


class TransformError(GenerationError, ValueError):
    """A test that cannot be rewritten into an observation test (the message says where)."""


def is_literal(node: ast.AST) -> bool:
    """Whether an expression is a literal: it holds an expected value, not a computed one."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and is_literal(k) for k in node.keys) and all(is_literal(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return is_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return is_literal(node.left) and is_literal(node.right)
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name == "approx":
            return True  # pytest.approx(...) is always the expected side
        return (name in LITERAL_CALLS and all(is_literal(a) for a in node.args)
                and all(is_literal(k.value) for k in node.keywords))
    return False


def _call(method: str | None, args: list[ast.expr], keywords: list[ast.keyword] | None = None) -> ast.Expr:
    func: ast.expr = ast.Name(FIXTURE, ast.Load())
    if method:
        func = ast.Attribute(func, method, ast.Load())
    return ast.Expr(ast.Call(func, args, keywords or []))


def _is_raises(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "raises" and isinstance(f.value, ast.Name)
            and f.value.id == "pytest") or (isinstance(f, ast.Name) and f.id == "raises")


def _hidden_assert(test: ast.expr) -> list[ast.stmt]:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _hidden_assert(test.operand)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [s for v in test.values for s in _hidden_assert(v)]
    if isinstance(test, ast.Compare):
        operands = [test.left, *test.comparators]
        kept = [o for o in operands if not is_literal(o)]
        return [_call(None, [o]) for o in kept]
    return [] if is_literal(test) else [_call(None, [test])]


def _visible_assert(test: ast.expr) -> list[ast.stmt]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [s for v in test.values for s in _visible_assert(v)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return [_call("truth", [test.operand, ast.Constant(False)])]
    if isinstance(test, ast.Compare):
        chain: list[ast.expr] = [test.left]
        for op, right in zip(test.ops, test.comparators, strict=True):
            chain += [ast.Constant(OPS[type(op)]), right]
        return [_call("compare", chain)]
    return [_call("truth", [test])]


class _Rewriter(ast.NodeTransformer):
    """Rewrites asserts and `pytest.raises` blocks inside one test function."""

    def __init__(self, mode: str):
        self.mode = mode

    def visit_Assert(self, node: ast.Assert):
        out = _hidden_assert(node.test) if self.mode == "hidden" else _visible_assert(node.test)
        for s in out:
            ast.copy_location(s, node)
        return out or ast.copy_location(ast.Pass(), node)

    def visit_With(self, node: ast.With):
        self.generic_visit(node)
        for item in node.items:
            if _is_raises(item.context_expr):
                kw = [k for k in item.context_expr.keywords if k.arg == "match"]
                call = _call("raises", [], kw).value
                item.context_expr = ast.copy_location(call, item.context_expr)
        return node


def _is_test(fn: ast.AST) -> bool:
    return isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith("test")


def _add_fixture(fn: ast.FunctionDef) -> None:
    # A test may observe directly (it already takes the fixture); asserts are rewritten either way.
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    if FIXTURE not in names:
        fn.args.args.append(ast.arg(FIXTURE))


def _tests(tree: ast.Module) -> list[ast.FunctionDef]:
    out = [n for n in tree.body if _is_test(n)]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
        out += [n for n in cls.body if _is_test(n)]
    return out


def observation_source(source: str, mode: str, where: str = "<test>") -> str:
    """The observation-test version of one assert-style test module (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown observation mode {mode!r} (choose {', '.join(MODES)})")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise TransformError(f"{where}: does not parse: {e.msg} (line {e.lineno})") from None
    tests = _tests(tree)
    inside = {id(n) for fn in tests for n in ast.walk(fn)}
    stray = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert) and id(n) not in inside]
    if stray:
        raise TransformError(f"{where}: assert outside a test function (line {stray[0]}): it cannot observe")
    rewriter = _Rewriter(mode)
    for fn in tests:
        _add_fixture(fn)
        fn.body = [s for stmt in fn.body for s in _as_list(rewriter.visit(stmt))] or [ast.Pass()]
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def _as_list(node) -> list[ast.stmt]:
    return node if isinstance(node, list) else [node]


def observation_files(files: Mapping[str, str], mode: str) -> dict[str, str]:
    """`observation_source` of every test module in path -> source (other files kept as they are)."""
    out = {}
    for path, src in sorted(files.items()):
        name = path.rsplit("/", 1)[-1]
        is_test_module = name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
        out[path] = observation_source(src, mode, path) if is_test_module else src
    return out


# --- recording the oracle's observations --------------------------------------------------------
EXPECTED_FORMAT = 1
TIME_LIMIT_FLOOR_S = 10.0  # a task's per-test limit never goes below this
TIME_LIMIT_FACTOR = 10.0  # ... and is this many times its slowest oracle test, rounded up to a power of 2


@dataclass(frozen=True)
class ObservationTests:
    """The observation tests of one task: hidden ones and the rewritten visible ones."""

    hidden: dict[str, str]  # repo path -> source (held-out, assert-free)
    observed: dict[str, str]  # repo path of a visible test file -> its observation version

    @classmethod
    def of(cls, visible_tests: Mapping[str, str], hidden_tests: Mapping[str, str]) -> ObservationTests:
        """Rewrite a task's visible test files and its authored hidden tests."""
        return cls(observation_files(hidden_tests, "hidden"), observation_files(visible_tests, "visible"))

    def overlay(self) -> dict[str, str]:
        """What phase 2 writes over a graded copy: the observed visible files, then the hidden ones."""
        return {**self.observed, **self.hidden}


def expected_from(run: TestRun, ids: Iterable[str]) -> tuple[dict[str, list], list[str]]:
    """The observations of every reported instance of `ids` in an oracle run, and what is wrong
    with them (an instance not passed, an observation that is not plain data, an id never run)."""
    expected: dict[str, list] = {}
    problems: list[str] = []
    for test_id in ids:
        found = run.instances(test_id)
        if not found:
            problems.append(f"{test_id}: not run ({run.problem or 'not in the report'})")
        for key, res in sorted(found.items()):
            if not res.passed:
                problems.append(f"{key}: {res.outcome} on the oracle fix: {res.message.strip()[-300:]}")
            elif res.observed is None:
                problems.append(f"{key}: no observations reported")
            elif not all(is_plain_encoding(o) for o in res.observed):
                bad = next(o for o in res.observed if not is_plain_encoding(o))
                problems.append(f"{key}: observes a value that is not plain data ({bad})")
            elif ["check", False] in [list(o) for o in res.observed]:
                problems.append(f"{key}: one of its assertions does not hold on the oracle fix")
            else:
                expected[key] = [list(o) for o in res.observed]
    return expected, problems


def expected_json(expected: Mapping[str, list]) -> str:
    """The text of a task's expected.json (deterministic)."""
    return json.dumps({"format": EXPECTED_FORMAT, "observations": dict(sorted(expected.items()))},
                      indent=1, sort_keys=True) + "\n"


def time_limit(durations: Iterable[float], floor: float = TIME_LIMIT_FLOOR_S) -> float:
    """The per-test time limit of a task from its oracle's test durations (coarse, so it is stable)."""
    slowest = max([d for d in durations if d > 0] or [0.0])
    if slowest * TIME_LIMIT_FACTOR <= floor:
        return float(floor)
    return float(2 ** math.ceil(math.log2(slowest * TIME_LIMIT_FACTOR)))


WRITTEN_SUFFIX = "__written.py"


def written_path(path: str) -> str:
    """Where generation puts the authored (assert-style) version of a held-out test file."""
    return path[:-3] + WRITTEN_SUFFIX


def run_observations(factory, root: Path, files: Mapping[str, str], tests: ObservationTests, modules: list[str],
                     timeout: float = 300.0, after: Mapping[str, str] | None = None,
                     bytecode: Mapping[str, bytes] | None = None) -> TestRun:
    """Write `files` with the observation tests over them at `root` and run them (observe mode);
    the test files `after` are added and run after all of them, in the same process. `bytecode`:
    the checked bytecode of `files`' modules (sdebench.generation.bytecode), written beside them."""
    tree = {**files, **tests.overlay(), **(after or {})}
    for rel, content in tree.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    if bytecode:
        for rel, pyc in bytecode.items():
            (root / rel).parent.mkdir(exist_ok=True)
            (root / rel).write_bytes(pyc)
    paths = sorted(tests.overlay()) + sorted(after or {})
    with factory.open(root) as sb:
        return run_tests(sb, paths, modules, timeout=timeout, mode="observe")


def write_task_observations(task_dir: Path, tests: ObservationTests, expected: Mapping[str, list]) -> None:
    """Write hidden/, observed/ and expected.json into a task dir (replacing what was there)."""
    for sub, files in ((HIDDEN_DIR, tests.hidden), (OBSERVED_DIR, tests.observed)):
        root = task_dir / sub
        if root.exists():
            shutil.rmtree(root)
        for rel, content in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(content)
    (task_dir / EXPECTED).write_text(expected_json(expected))


def record_task(task_dir: Path, head: Mapping[str, str], oracle_files: Mapping[str, str],
                hidden_tests: Mapping[str, str], visible_ids: Iterable[str], hidden_ids: Iterable[str],
                sandbox_cfg: dict | None = None) -> float:
    """For a hand-built task dir: rewrite its tests, record the oracle's observations, write them.

    Returns the per-test time limit measured. Raises TransformError if the oracle's observations
    are not usable (a test fails on the oracle, or observes something that is not plain data).
    """
    from sdebench.sandbox import make_factory

    visible_ids, hidden_ids = list(visible_ids), list(hidden_ids)
    files = {p for p in {i.split("::", 1)[0] for i in visible_ids} if p in head}
    tests = ObservationTests.of({p: head[p] for p in files}, hidden_tests)
    factory = make_factory(sandbox_cfg or {"backend": "unsafe_local"})
    with tempfile.TemporaryDirectory(prefix="record-") as tmp:
        run = run_observations(factory, Path(tmp) / "repo", {**head, **oracle_files}, tests,
                               module_names(sorted(oracle_files)))
    expected, problems = expected_from(run, [*visible_ids, *hidden_ids])
    if problems:
        raise TransformError(f"{task_dir.name}: " + "; ".join(problems[:3]))
    write_task_observations(task_dir, tests, expected)
    return time_limit(r.duration for r in run.tests.values())


# --- answers left in a test's source ------------------------------------------------------------
_EVAL_NAMES = {"Decimal": Decimal, "date": datetime.date, "datetime": datetime.datetime, "time": datetime.time,
               "timedelta": datetime.timedelta, "Fraction": Fraction, "set": set, "frozenset": frozenset,
               "tuple": tuple, "list": list, "dict": dict, "float": float, "int": int, "str": str, "bytes": bytes,
               "approx": lambda v, *a, **k: v}


def _leaves(enc) -> list[str]:
    """The scalar texts inside an encoded value that would give an answer away: floats, Decimals and
    dates (ints, strings, booleans and None are too often inputs handed back to count)."""
    if not isinstance(enc, list) or not enc:
        return []
    tag = enc[0]
    if tag in ("list", "tuple", "set", "frozenset"):
        return [t for e in enc[1] for t in _leaves(e)]
    if tag == "dict":
        return [t for k, v in enc[1] for t in _leaves(k) + _leaves(v)]
    if tag == "int":
        return []  # ints are too often inputs handed back (years, counts); fact tokens catch the rest
    if tag == "float":
        return [enc[1]] if float(enc[1]) not in (0.0, 1.0, -1.0) else []
    if tag == "str":
        return []  # strings are too often inputs handed back (ids, names): judged by review instead
    if tag in ("Decimal", "date", "datetime", "time"):
        return [str(enc[1])]
    return []


def source_texts(source: str) -> set[str]:
    """Every scalar text a test module spells out: its constants, and the values of its literal
    expressions (`Decimal("1.20")`, `datetime(2024, 3, 5, 4)`, ...), as the encoder writes them."""
    from sdebench.grading._runner import safe_encode

    texts: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float) and not isinstance(node.value, bool):
            texts.update(_leaves(safe_encode(node.value)))
            if isinstance(node.value, str):
                texts.add(node.value)
        elif isinstance(node, ast.expr) and is_literal(node):
            try:
                value = eval(compile(ast.Expression(node), "<literal>", "eval"), {"__builtins__": {}}, _EVAL_NAMES)
            except Exception:  # noqa: BLE001 - a literal that does not evaluate spells nothing out
                continue
            texts.update(_leaves(safe_encode(value)))
    return texts


def answers_in_source(expected: list, source_text: set[str]) -> list[str]:
    """The texts of `expected` (one test's observations) that its test module spells out."""
    return sorted({t for enc in expected for t in _leaves(enc) if t in source_text})
