"""Rewrite an imported assert-style test module into an observation test whose assertions stay on the host.

Every assertion of the module becomes a *site*: `assert`, the unittest `self.assert*` family, a
`pytest.raises` / `self.assertRaises` block or call, and `excinfo.match(...)`. In the rewritten
module a site only evaluates its *leaves* (the operands that are not literals) and observes them
through the runner's `observe` fixture; its operators, its literal operands, the exception types
it expects and its `match` pattern are kept in a *check* on the host (sdebench.interop.bugsinpy_checks).

The expected side of an assertion leaves the sandbox when it is a literal, also through a name
bound once to a literal and used only in assertions (`expected = [1, 2]` ... `assert f() == expected`:
the binding is dropped and the literal moves to the check), or a `pytest.mark.parametrize`
argument used only in assertions (its values move to the host, one row per instance, and the
decorator keeps a case number instead), or the target of a loop over literal rows read only in
assertions (`for x, want in [(1, 2), ...]`: the loop runs over row numbers, each check event says
which row, and the values move to the host). An exception class imported only to name what a
`raises` block expects is dropped from the import. What stays computed in the sandbox
(an expected value built from other values, a loop's rows, a helper's arguments) is observed like
any leaf and compared here: plain data, judged on the host, but visible to the submission.

A test holding no site the host can judge (none in its body or in a helper it calls) is excluded
(it would be judged in the sandbox); the rewrite names it. Sites outside any function (module-
level asserts) and constructs the rewrite does not know are left as written and counted.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections import Counter
from dataclasses import dataclass, field

from sdebench.errors import InteropError
from sdebench.interop.bugsinpy_checks import FORMAT, call_name, is_literal

PFX = "_sdebench_"
OBSERVE = f"{PFX}observe"
CHECK = f"{PFX}check"
RAISES = f"{PFX}raises"
CASE = f"{PFX}case"
PREAMBLE = f'''
import builtins as {PFX}builtins
import datetime as {PFX}datetime
import decimal as {PFX}decimal

import pytest as {PFX}pytest

{OBSERVE} = None
{PFX}PLAIN = (type(None), bool, int, float, str, bytes, list, tuple, set, frozenset, dict, {PFX}decimal.Decimal,
              {PFX}datetime.date, {PFX}datetime.datetime, {PFX}datetime.time, {PFX}datetime.timedelta)
{PFX}EXC = {{v: k for k, v in vars({PFX}builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}}
{PFX}mro = type.__dict__["__mro__"].__get__
{PFX}bases = type.__dict__["__bases__"].__get__


@{PFX}pytest.fixture(autouse=True)
def {PFX}observer(observe):
    global {OBSERVE}
    {OBSERVE} = observe
    yield
    {OBSERVE} = None


def {PFX}leaf(f):
    try:
        v = f()
    except Exception:
        return ("e",)
    if type(v) in {PFX}PLAIN:
        return ("v", v)
    try:
        return ("o", bool(v))
    except Exception:
        return ("e",)


def {CHECK}(j, *leaves, _rows=()):
    {OBSERVE}((j, *[("row", n, k) for n, k in _rows], *[{PFX}leaf(f) for f in leaves]))


def {PFX}lineage(kind):
    out = []
    while kind is not None:
        name = {PFX}EXC.get(kind)
        out.append("builtins." + name if name else "other:" + str(kind.__module__) + "." + str(kind.__qualname__))
        up = [b for b in {PFX}bases(kind) if BaseException in {PFX}mro(b)]
        if len(up) > 1:
            return ()
        kind = up[0] if up else None
    return tuple(out)


class {RAISES}:
    def __init__(self, j):
        self.j = j
        self.type = self.value = self.tb = None

    @property
    def exception(self):
        return self.value

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            {OBSERVE}((self.j, ("n",)))
            return False
        self.type, self.value, self.tb = kind, exc, tb
        try:
            msg = str(exc)
        except Exception:
            msg = None
        {OBSERVE}((self.j, ("r", {PFX}lineage(kind), msg if type(msg) is str else None)))
        return True
'''

# unittest assertion -> how the host judges it: ("cmp", op) on (first, second), ("truth", expect),
# ("is", literal) on (first,), or ("call", name, number of value arguments).
UNITTEST: dict[str, tuple] = {
    **{n: ("cmp", "==") for n in ("assertEqual", "assertEquals", "failUnlessEqual", "assertListEqual",
                                  "assertTupleEqual", "assertDictEqual", "assertSetEqual", "assertSequenceEqual",
                                  "assertMultiLineEqual")},
    **{n: ("cmp", "!=") for n in ("assertNotEqual", "assertNotEquals", "failIfEqual")},
    "assertTrue": ("truth", True), "assert_": ("truth", True), "failUnless": ("truth", True),
    "assertFalse": ("truth", False), "failIf": ("truth", False),
    "assertIs": ("cmp", "is"), "assertIsNot": ("cmp", "is not"),
    "assertIsNone": ("is", "is"), "assertIsNotNone": ("is", "is not"),
    "assertIn": ("cmp", "in"), "assertNotIn": ("cmp", "not in"),
    "assertGreater": ("cmp", ">"), "assertGreaterEqual": ("cmp", ">="),
    "assertLess": ("cmp", "<"), "assertLessEqual": ("cmp", "<="),
    "assertAlmostEqual": ("call", "almost", 2), "assertAlmostEquals": ("call", "almost", 2),
    "assertNotAlmostEqual": ("call", "not_almost", 2),
    "assertCountEqual": ("call", "count_equal", 2), "assertItemsEqual": ("call", "count_equal", 2),
    "assertRegex": ("call", "regex", 2), "assertRegexpMatches": ("call", "regex", 2),
    "assertNotRegex": ("call", "not_regex", 2),
    "assertIsInstance": ("isinstance", True), "assertNotIsInstance": ("isinstance", False),
}
RAISES_CALLS = {"raises": False, "assertRaises": False, "assertRaisesRegex": True, "assertRaisesRegexp": True}
_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is",
        ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


MAX_SOURCE = 256 * 1024  # characters of a test module the rewrite takes (a dataset's are a few KiB)


class RewriteError(InteropError, ValueError):
    """A test module that cannot be rewritten at all (the message says why)."""


@dataclass
class Rewritten:
    """An observation test module and what the host needs to judge it."""

    source: str
    checks: dict[str, dict]  # site index -> check
    tests: dict[str, dict]  # static test id -> {"required": [site indices], "params": {case key -> {name: literal}}}
    excluded: dict[str, str] = field(default_factory=dict)  # static test id -> why it is not graded
    in_sandbox: list[str] = field(default_factory=list)  # where an assertion is still judged in the sandbox
    loops: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # literal loop -> its rows' host values

    def table(self) -> dict:
        """The JSON-ready host table (without any oracle)."""
        return {"format": FORMAT, "checks": self.checks, "tests": self.tests, "excluded": self.excluded,
                "in_sandbox": self.in_sandbox, "loops": self.loops}


# --- scopes -------------------------------------------------------------------------------------
class _Scope:
    def __init__(self, node: ast.AST | None, parent: _Scope | None, kind: str):
        self.node, self.parent, self.kind = node, parent, kind
        self.bound: Counter[str] = Counter()
        self.declared: set[str] = set()  # global / nonlocal here

    def function(self) -> _Scope:
        s = self
        while s.kind in ("class", "comprehension") and s.parent is not None:
            s = s.parent
        return s


class _Scopes(ast.NodeVisitor):
    """Which scope each Name belongs to, and how often each scope binds each name."""

    def __init__(self, tree: ast.Module):
        self.module = _Scope(tree, None, "module")
        self.of_name: dict[int, _Scope] = {}
        self.of_node: dict[int, _Scope] = {id(tree): self.module}
        self.cur = self.module
        self.visit(tree)

    def _in(self, scope: _Scope, nodes) -> None:
        prev, self.cur = self.cur, scope
        for n in nodes:
            self.visit(n)
        self.cur = prev

    def _bind(self, name: str, scope: _Scope | None = None) -> None:
        scope = scope or self.cur
        if name in scope.declared:
            scope = self.module if self._is_global(scope, name) else (scope.parent or self.module).function()
        scope.bound[name] += 1

    def _is_global(self, scope: _Scope, name: str) -> bool:
        return isinstance(scope.node, _FUNC) and any(
            isinstance(n, ast.Global) and name in n.names for n in ast.walk(scope.node))

    def visit_FunctionDef(self, node):
        for d in [*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d]]:
            self.visit(d)
        self._bind(node.name)
        scope = _Scope(node, self.cur, "function")
        self.of_node[id(node)] = scope
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if a is not None:
                scope.bound[a.arg] += 1
        self._in(scope, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for d in [*node.args.defaults, *[d for d in node.args.kw_defaults if d]]:
            self.visit(d)
        scope = _Scope(node, self.cur, "function")
        self.of_node[id(node)] = scope
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if a is not None:
                scope.bound[a.arg] += 1
        self._in(scope, [node.body])

    def visit_ClassDef(self, node):
        for d in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.visit(d)
        self._bind(node.name)
        scope = _Scope(node, self.cur, "class")
        self.of_node[id(node)] = scope
        self._in(scope, node.body)

    def _comprehension(self, node, parts):
        self.visit(node.generators[0].iter)
        scope = _Scope(node, self.cur, "comprehension")
        self.of_node[id(node)] = scope
        prev, self.cur = self.cur, scope
        for i, g in enumerate(node.generators):
            self.visit(g.target)
            if i:
                self.visit(g.iter)
            for c in g.ifs:
                self.visit(c)
        for p in parts:
            self.visit(p)
        self.cur = prev

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    def visit_Global(self, node):
        self.cur.declared.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self._bind(node.target.id, self.cur.function())
        self.of_name[id(node.target)] = self.cur.function()

    def visit_Name(self, node):
        self.of_name[id(node)] = self.cur
        if not isinstance(node.ctx, ast.Load):
            self._bind(node.id)

    def visit_alias(self, node):
        if node.name != "*":
            self._bind(node.asname or node.name.split(".")[0])

    def visit_ExceptHandler(self, node):
        if node.name:
            self._bind(node.name)
        self.generic_visit(node)

    def resolve(self, node: ast.Name) -> _Scope | None:
        """The scope a Load of `node` reads (None: a builtin or undefined)."""
        name, s, first = node.id, self.of_name.get(id(node), self.module), True
        while s is not None:
            if name in s.declared and s.kind == "function":
                return self.module if self._is_global(s, name) else (s.parent or self.module).function()
            if (s.kind != "class" or first) and s.bound[name]:
                return s
            first, s = False, s.parent
        return None


# --- sites ---------------------------------------------------------------------------------------
@dataclass
class _Site:
    index: int
    stmt: ast.stmt
    kind: str  # check | raises
    tree: object = None  # check: the structure with ("slot", node) operands
    types: list[str] = field(default_factory=list)  # raises: the expected exception names
    type_nodes: list[ast.expr] = field(default_factory=list)
    match: ast.expr | None = None
    target: ast.expr | None = None  # raises: the `as` target
    body: list[ast.stmt] = field(default_factory=list)  # raises: the block (or the call, as a statement)


def _structure(node: ast.expr) -> object:
    """An assertion's boolean structure down to its operand slots."""
    if isinstance(node, ast.Compare):
        chain: list = [_structure_operand(node.left)]
        for op, right in zip(node.ops, node.comparators, strict=True):
            chain += [_OPS[type(op)], _structure_operand(right)]
        return ("cmp", chain)
    if isinstance(node, ast.BoolOp):
        return ("and" if isinstance(node.op, ast.And) else "or", [_structure(v) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ("not", _structure(node.operand))
    return _structure_operand(node)


def _structure_operand(node: ast.expr) -> object:
    if isinstance(node, ast.Compare | ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return _structure(node)
    if call_name(node) == "approx" and len(node.args) == 1 and all(k.arg for k in node.keywords):
        return ("approx", ("slot", node.args[0]), {k.arg: ("slot", k.value) for k in node.keywords})
    return ("slot", node)


def _exception_names(node: ast.expr) -> list[str] | None:
    """`E`, `mod.E` or a tuple of them as dotted names (None: not a static class reference)."""
    if isinstance(node, ast.Tuple):
        parts = [_exception_names(e) for e in node.elts]
        return None if any(p is None for p in parts) else [n for p in parts for n in p]
    try:
        name = ast.unparse(node)
    except Exception:  # noqa: BLE001
        return None
    return [name] if all(p.isidentifier() for p in name.split(".")) else None


def _unittest(call: ast.Call) -> tuple[str, ast.Call] | None:
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
        return f.attr, call
    return None


def _unittest_structure(name: str, call: ast.Call) -> object | None:
    spec = UNITTEST[name]
    args = list(call.args)
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in args):
        return None
    first = args[0] if args else kw.get("first", kw.get("expr", kw.get("obj", kw.get("member", kw.get("text")))))
    if first is None:
        return None
    if spec[0] == "truth":
        return _structure_operand(first) if spec[1] else ("not", _structure_operand(first))
    if spec[0] == "is":
        return ("cmp", [_structure_operand(first), spec[1], ("slot", ast.Constant(None))])
    second = args[1] if len(args) > 1 else kw.get("second", kw.get("container", kw.get("cls", kw.get(
        "expected_regex", kw.get("unexpected_regex", kw.get("b"))))))
    if second is None:
        return None
    if spec[0] == "isinstance":
        node = ast.Call(ast.Name("isinstance", ast.Load()), [first, second], [])
        return _structure_operand(node) if spec[1] else ("not", _structure_operand(node))
    if spec[0] == "cmp":
        return ("cmp", [_structure_operand(first), spec[1], _structure_operand(second)])
    extra = {}
    if spec[1] in ("almost", "not_almost"):
        if len(args) > 2:
            extra["places"] = args[2]
        for k in ("places", "delta"):
            if k in kw:
                extra[k] = kw[k]
    return ("call", spec[1], [_structure_operand(first), _structure_operand(second)],
            {k: _structure_operand(v) for k, v in extra.items()})


class _Collector(ast.NodeVisitor):
    """Finds the sites of a module (in functions) and the statements left as written."""

    def __init__(self):
        self.sites: list[_Site] = []
        self.by_stmt: dict[int, _Site] = {}
        self.in_sandbox: list[str] = []
        self.depth = 0
        self.raises_targets: set[str] = set()

    def _add(self, site: _Site) -> None:
        self.sites.append(site)
        self.by_stmt[id(site.stmt)] = site

    def _new(self, stmt, kind, **kw) -> _Site:
        return _Site(len(self.sites), stmt, kind, **kw)

    def visit_FunctionDef(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def _outside(self, node, what) -> bool:
        if self.depth == 0:
            self.in_sandbox.append(f"line {node.lineno}: {what} outside a function")
            return True
        return False

    def visit_Assert(self, node):
        if not self._outside(node, "assert"):
            self._add(self._new(node, "check", tree=_structure(node.test)))

    def visit_Expr(self, node):
        call = node.value
        if not isinstance(call, ast.Call) or self.depth == 0:
            return self.generic_visit(node)
        name = call_name(call)
        ut = _unittest(call)
        if ut and ut[0] in UNITTEST:
            tree = _unittest_structure(*ut)
            if tree is None:
                self.in_sandbox.append(f"line {node.lineno}: self.{ut[0]}(...) with arguments the rewrite does not read")
            else:
                self._add(self._new(node, "check", tree=tree))
            return None
        if name in RAISES_CALLS and (ut or _is_pytest(call.func)) and len(call.args) >= 2 + RAISES_CALLS[name]:
            site = self._raises(node, call, name, ut is not None)
            if site is not None:
                fn_at = 1 + RAISES_CALLS[name]
                fn, rest = call.args[fn_at], call.args[fn_at + 1:]
                site.body = [ast.Expr(ast.Call(fn, rest, [k for k in call.keywords if k.arg not in ("match",)]))]
                self._add(site)
            return None
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "match" and isinstance(call.func.value, ast.Name)
                and call.func.value.id in self.raises_targets and len(call.args) == 1):
            text = ast.Call(ast.Name("str", ast.Load()), [ast.Attribute(call.func.value, "value", ast.Load())], [])
            self._add(self._new(node, "check", tree=("call", "regex", [("slot", text), ("slot", call.args[0])], {})))
            return None
        return self.generic_visit(node)

    def _raises(self, stmt, call: ast.Call, name: str, unittest_style: bool) -> _Site | None:
        if not call.args:
            return None
        types = _exception_names(call.args[0])
        match = next((k.value for k in call.keywords if k.arg in ("match", "expected_regex")), None)
        if RAISES_CALLS[name] and len(call.args) > 1:
            match = call.args[1]
        if types is None or (match is not None and not is_literal(match)):
            self.in_sandbox.append(f"line {stmt.lineno}: a raises check with a computed type or pattern")
            return None
        return self._new(stmt, "raises", types=types, type_nodes=[call.args[0]], match=match)

    def visit_With(self, node):
        if self.depth and len(node.items) == 1 and isinstance(node.items[0].context_expr, ast.Call):
            call = node.items[0].context_expr
            name = call_name(call)
            ut = _unittest(call)
            if name in RAISES_CALLS and (ut or _is_pytest(call.func)) and len(call.args) == 1 + RAISES_CALLS[name]:
                site = self._raises(node, call, name, ut is not None)
                if site is not None:
                    site.target = node.items[0].optional_vars
                    if isinstance(site.target, ast.Name):
                        self.raises_targets.add(site.target.id)
                    site.body = node.body
                    self._add(site)
        self.generic_visit(node)


def _is_pytest(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "pytest") or (
        isinstance(func, ast.Name) and func.id == "raises")


def _slots(tree) -> list[ast.expr]:
    if isinstance(tree, tuple):
        if tree[0] == "slot":
            return [tree[1]]
        return [s for part in tree[1:] for s in _slots(part)]
    if isinstance(tree, list):
        return [s for part in tree for s in _slots(part)]
    if isinstance(tree, dict):
        return [s for part in tree.values() for s in _slots(part)]
    return []


# --- the rewrite ---------------------------------------------------------------------------------
def _test_functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef, ast.ClassDef | None]]:
    """(qualified name, function, class) of every test pytest collects from the module by default."""
    out = []
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for node in tree.body:
        if isinstance(node, _FUNC) and node.name.startswith("test"):
            out.append((node.name, node, None))
        elif isinstance(node, ast.ClassDef) and _collected_class(node):
            seen = set()
            for cls in _lineage(node, classes):
                for fn in cls.body:
                    if isinstance(fn, _FUNC) and fn.name.startswith("test") and fn.name not in seen:
                        seen.add(fn.name)
                        out.append((f"{node.name}::{fn.name}", fn, cls))
    return out


def _collected_class(node: ast.ClassDef) -> bool:
    is_case = any((isinstance(b, ast.Name) and b.id.endswith("TestCase")) or
                  (isinstance(b, ast.Attribute) and b.attr.endswith("TestCase")) for b in node.bases)
    has_init = any(isinstance(f, _FUNC) and f.name == "__init__" for f in node.body)
    return is_case or (node.name.startswith("Test") and not has_init)


def _lineage(node: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    out, todo = [], [node]
    while todo:
        c = todo.pop(0)
        if c in out:
            continue
        out.append(c)
        todo += [classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes]
    return out


class _Emit(ast.NodeTransformer):
    """Writes the rewritten module: sites replaced, dropped bindings and imports removed."""

    def __init__(self, rw: _Rewrite):
        self.rw = rw

    def visit_Assert(self, node):
        return self.rw.emit_site(node) or node

    def visit_Expr(self, node):
        site = self.rw.emit_site(node)
        return site if site is not None else self.generic_visit(node)

    def visit_With(self, node):
        site = self.rw.collector.by_stmt.get(id(node))
        if site is None:
            return self.generic_visit(node)
        node.body = [s for stmt in node.body for s in _as_list(self.visit(stmt))] or [ast.Pass()]
        site.body = node.body
        return self.rw.emit_site(node)

    def visit_Assign(self, node):
        return None if id(node) in self.rw.dropped else self.generic_visit(node)

    def visit_ImportFrom(self, node):
        node.names = [a for a in node.names if id(a) not in self.rw.dropped]
        return node if node.names else None

    def visit_Import(self, node):
        return self.visit_ImportFrom(node)

    def visit_FunctionDef(self, node):
        if id(node) in self.rw.removed:
            return None
        node.decorator_list = [self.rw.decorators.get(id(d), d) for d in node.decorator_list]
        self.rw.resign(node)
        self.generic_visit(node)
        node.body = node.body or [ast.Pass()]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        node.body = node.body or [ast.Pass()]
        return node


def _as_list(node) -> list:
    return node if isinstance(node, list) else [] if node is None else [node]


class _Rewrite:
    def __init__(self, source: str, path: str):
        self.path = path
        if len(source) > MAX_SOURCE:
            raise RewriteError(f"{path} is too large to rewrite ({len(source)} characters, at most {MAX_SOURCE})")
        try:
            self.tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError) as e:
            raise RewriteError(f"{path} does not parse: {getattr(e, 'msg', e)} (line {getattr(e, 'lineno', '?')})") from None
        self.scopes = _Scopes(self.tree)
        self.collector = _Collector()
        self.collector.visit(self.tree)
        self.dropped: set[int] = set()  # Assign / alias nodes removed
        self.removed: set[int] = set()  # excluded test functions
        self.decorators: dict[int, ast.expr] = {}
        self.signatures: dict[int, tuple[set[str], list[str]]] = {}  # function -> (params dropped, cases added)
        self.params: dict[int, dict[str, dict[str, ast.expr]]] = {}  # function -> case key -> name -> literal
        self.bindings: dict[tuple[int, str], ast.expr] = {}  # (scope node, name) -> literal it is bound to
        self.values: dict[int, list] = {}  # operand -> its value (encoded), computed without the code under test

    # The literal names: bound once to a literal, read only inside assertion operands that are then literal.
    def literal_names(self) -> None:
        slots = [s for site in self.collector.sites if site.kind == "check" for s in _slots(site.tree)]
        candidates = self._candidates()
        while True:
            host = [s for s in slots if is_literal(s, self._names_for(s, candidates))]
            covered = {id(n) for s in host for n in ast.walk(s)}
            keep = {k: v for k, v in candidates.items() if all(id(load) in covered for load in v[1])}
            if keep.keys() == candidates.keys():
                break
            candidates = keep
        self.bindings = {k: v for k, (v, _) in candidates.items() if k not in self.param_keys}
        self.moved_params = {k for k in candidates if k in self.param_keys}
        self.literal_slots = {id(s) for s in host}

    def _names_for(self, slot: ast.expr, candidates) -> dict[str, ast.expr]:
        """The candidate names `slot` reads, bound to their literals (a parametrize argument to a stand-in)."""
        out = {}
        for n in ast.walk(slot):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                scope = self.scopes.resolve(n)
                key = (id(scope.node), n.id) if scope else None
                if key in candidates:
                    out[n.id] = candidates[key][0]
        return out

    def _candidates(self) -> dict[tuple[int, str], tuple[ast.expr, list[ast.Name]]]:
        found: dict[tuple[int, str], tuple[ast.expr, ast.AST]] = {}
        for scope_node in [self.tree, *[n for n in ast.walk(self.tree) if isinstance(n, _FUNC)]]:
            scope = self.scopes.of_node[id(scope_node)]
            for stmt in scope_node.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                        and scope.bound[stmt.targets[0].id] == 1 and stmt.targets[0].id not in scope.declared
                        and is_literal(stmt.value)):
                    found[(id(scope_node), stmt.targets[0].id)] = (stmt.value, stmt)
        self.param_keys = set()
        for fn in (n for n in ast.walk(self.tree) if isinstance(n, _FUNC)):
            scope = self.scopes.of_node[id(fn)]
            for dec in fn.decorator_list:
                spec = _parametrize(dec)
                for name in spec[0] if spec else ():
                    if scope.bound[name] == 1 and name in {a.arg for a in fn.args.args}:
                        # A stand-in value: whether an operand is literal does not depend on the row.
                        found[(id(fn), name)] = (ast.Constant(0), dec)
                        self.param_keys.add((id(fn), name))
        self.loops = self._literal_loops(found)
        for loop, (fn, names, _rows) in self.loops.items():
            for name in names:
                if self.scopes.of_node[id(fn)].bound[name] == 1:
                    found[(id(fn), name)] = (ast.Constant(0), loop)
                    self.param_keys.add((id(fn), name))
        loads: dict[tuple[int, str], list[ast.Name]] = {k: [] for k in found}
        iters: set[int] = set()
        for loop in self.loops:
            iters |= {id(n) for n in ast.walk(loop.iter)}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in iters:
                scope = self.scopes.resolve(n)
                key = (id(scope.node), n.id) if scope else None
                if key in loads:
                    loads[key].append(n)
        self._assigns = {k: stmt for k, (_, stmt) in found.items()}
        return {k: (v, loads[k]) for k, (v, _) in found.items()}

    def _literal_loops(self, bindings) -> dict[ast.For, tuple[ast.FunctionDef, list[str], list[list[ast.expr]]]]:
        """`for a, b in <literal rows>:` loops holding an assertion (the rows may come through a name bound
        to a literal): loop -> (function, target names, rows)."""
        out = {}
        for fn in (n for n in ast.walk(self.tree) if isinstance(n, _FUNC)):
            for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
                t = loop.target
                names = [t.id] if isinstance(t, ast.Name) else [e.id for e in t.elts] if isinstance(
                    t, ast.Tuple | ast.List) and all(isinstance(e, ast.Name) for e in t.elts) else None
                if names is None or loop.orelse or not any(id(x) in self.collector.by_stmt for x in ast.walk(loop)):
                    continue
                table = loop.iter
                if isinstance(table, ast.Name):
                    scope = self.scopes.resolve(table)
                    table = bindings.get((id(scope.node), table.id), (None,))[0] if scope else None
                if not isinstance(table, ast.List | ast.Tuple) or not table.elts:
                    continue
                rows = [list(r.elts) if len(names) > 1 and isinstance(r, ast.Tuple | ast.List) else [r] for r in table.elts]
                if all(len(r) == len(names) and all(is_literal(x) for x in r) for r in rows) and len(rows) <= 1000:
                    out[loop] = (fn, names, rows)
        return out

    def solution_free(self, evaluate, code: str) -> None:
        """Operands computed from the test's own imports and literals alone (`"a" + os.sep + "b"`), never
        from module `code` or a test's locals: `evaluate(imports, expressions)` computes them once, where
        no code under test exists; those it gives a value for move to the host."""
        imports = [s for s in self.tree.body if isinstance(s, ast.Import | ast.ImportFrom) and not _imports(s, code)]
        bound = {a.asname or a.name.split(".")[0] for s in imports for a in s.names if a.name != "*"}
        slots = [s for site in self.collector.sites if site.kind == "check" for s in _slots(site.tree)
                 if id(s) not in self.literal_slots and self._free(s, bound)]
        if not slots:
            return
        found = evaluate("\n".join(ast.unparse(s) for s in imports), [ast.unparse(self._substituted(s)) for s in slots])
        self.values = {id(s): enc for s, enc in zip(slots, found, strict=True) if enc is not None}

    def _free(self, slot: ast.expr, bound: set[str]) -> bool:
        if any(isinstance(n, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp | ast.NamedExpr |
                          ast.Await | ast.Yield | ast.YieldFrom) for n in ast.walk(slot)):
            return False
        names = [n for n in ast.walk(slot) if isinstance(n, ast.Name)]
        if not names:
            return False  # a literal, or nothing worth a run
        literal = self._names_for(slot, {k: (v, []) for k, v in self.bindings.items()})
        for n in names:
            scope = self.scopes.resolve(n)
            if n.id in literal:
                continue
            if scope is None and hasattr(builtins, n.id):
                continue
            if scope is not self.scopes.module or n.id not in bound or self.scopes.module.bound[n.id] != 1:
                return False
        return True

    def drop_bindings(self) -> None:
        for key in self.bindings:
            stmt = self._assigns[key]
            if isinstance(stmt, ast.Assign):
                self.dropped.add(id(stmt))

    # parametrize arguments moved to the host: rows become case numbers
    def move_params(self) -> None:
        moved: dict[int, set[str]] = {}
        for scope_id, name in self.moved_params:
            moved.setdefault(scope_id, set()).add(name)
        for fn in (n for n in ast.walk(self.tree) if isinstance(n, _FUNC) and id(n) in moved):
            cases: list[str] = []
            table: dict[str, dict[str, ast.expr]] = {}
            for k, dec in enumerate(fn.decorator_list):
                spec = _parametrize(dec)
                if spec is None or not set(spec[0]) & moved[id(fn)]:
                    continue
                names, rows = spec
                keep = [i for i, n in enumerate(names) if n not in moved[id(fn)]]
                case = f"{CASE}{k}"
                cases.append(case)
                new_rows = []
                for r, row in enumerate(rows):
                    key = f"c{k}_{r}"
                    table[key] = {names[i]: row[i] for i in range(len(names)) if i not in keep}
                    new_rows.append(ast.Tuple([row[i] for i in keep] + [ast.Constant(r)], ast.Load()))
                new_names = ",".join([names[i] for i in keep] + [case])
                ids = ast.List([ast.Constant(f"c{k}_{r}") for r in range(len(rows))], ast.Load())
                self.decorators[id(dec)] = ast.Call(dec.func, [ast.Constant(new_names), ast.List(new_rows, ast.Load())],
                                                    [ast.keyword("ids", ids)])
            self.signatures[id(fn)] = (moved[id(fn)], cases)
            self.params[id(fn)] = table

    def move_loops(self) -> None:
        """Each literal loop iterates over row numbers (and the values it reads as inputs); the values
        only its assertions read move to the host, one row each."""
        self.loop_ids: dict[int, int] = {}
        self.loop_tables: dict[str, list[dict[str, str]]] = {}
        self.in_loop: dict[int, tuple[int, ...]] = {}  # node -> the literal loops around it
        for n, (loop, (fn, names, rows)) in enumerate(self.loops.items()):
            moved = {name for name in names if (id(fn), name) in self.moved_params}
            keep = [i for i, name in enumerate(names) if name not in moved]
            self.loop_ids[id(loop)] = n
            self.loop_tables[str(n)] = [{names[i]: ast.unparse(r[i]) for i in range(len(names)) if i not in keep}
                                        for r in rows]
            index = ast.Name(f"{PFX}row{n}", ast.Store())
            loop.target = ast.Tuple([ast.Name(names[i], ast.Store()) for i in keep] + [index], ast.Store())
            loop.iter = ast.List([ast.Tuple([r[i] for i in keep] + [ast.Constant(k)], ast.Load())
                                  for k, r in enumerate(rows)], ast.Load())
            self.in_loop.update({id(x): self.in_loop.get(id(x), ()) + (n,) for x in ast.walk(loop) if x is not loop})

    def resign(self, fn) -> None:
        """Drop moved parametrize arguments from a signature and take the case numbers instead."""
        if id(fn) not in self.signatures:
            return
        gone, cases = self.signatures[id(fn)]
        fn.args.args = [a for a in fn.args.args if a.arg not in gone] + [ast.arg(c) for c in cases]

    def drop_raises_imports(self) -> None:
        """`from x import E` aliases read only as the exception a raises site expects."""
        type_nodes = {id(n) for site in self.collector.sites for t in site.type_nodes for n in ast.walk(t)}
        loads: dict[str, list[ast.Name]] = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and self.scopes.resolve(n) is self.scopes.module:
                loads.setdefault(n.id, []).append(n)
        for stmt in self.tree.body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            for alias in stmt.names:
                name = alias.asname or alias.name
                if self.scopes.module.bound[name] != 1:
                    continue
                if loads.get(name) and all(id(n) in type_nodes for n in loads[name]):
                    self.dropped.add(id(alias))

    # --- emitting sites ------------------------------------------------------------------------
    def emit_site(self, stmt):
        site = self.collector.by_stmt.get(id(stmt))
        if site is None:
            return None
        j = ast.Constant(site.index)
        if site.kind == "raises":
            body = site.body or [ast.Pass()]
            return ast.copy_location(ast.With([ast.withitem(ast.Call(ast.Name(RAISES, ast.Load()), [j], []),
                                                            site.target)], body), stmt)
        leaves = [self._leaf(s) for s in _slots(site.tree) if id(s) not in self.literal_slots and id(s) not in self.values]
        rows = [ast.Tuple([ast.Constant(n), ast.Name(f"{PFX}row{n}", ast.Load())], ast.Load())
                for n in self.in_loop.get(id(stmt), ())]
        kw = [ast.keyword("_rows", ast.Tuple(rows, ast.Load()))] if rows else []
        return ast.copy_location(ast.Expr(ast.Call(ast.Name(CHECK, ast.Load()), [j, *leaves], kw)), stmt)

    @staticmethod
    def _leaf(node: ast.expr) -> ast.expr:
        body = copy.deepcopy(node)
        eager = any(isinstance(n, ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom) or
                    (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args)
                    for n in ast.walk(node))
        noargs = ast.arguments([], [], None, [], [], None, [])
        if not eager:
            return ast.Lambda(noargs, body)
        # Evaluated where it stands (a default value), since a lambda body would change its meaning.
        v = f"{PFX}v"
        return ast.Lambda(ast.arguments([], [ast.arg(v)], None, [], [], None, [body]), ast.Name(v, ast.Load()))

    def check_of(self, site: _Site) -> dict:
        if site.kind == "raises":
            return {"kind": "raises", "types": site.types,
                    "match": ast.unparse(self._substituted(site.match)) if site.match is not None else None}
        counter = [0]
        expr = self._json(site.tree, counter)
        return {"kind": "check", "expr": expr, "leaves": counter[0]}

    def _substituted(self, node: ast.expr) -> ast.expr:
        """`node` with the literal names it reads replaced by their literals (parametrize arguments kept)."""
        names = self._names_for(node, {k: (v, []) for k, v in self.bindings.items()})
        out = copy.deepcopy(node)

        class Sub(ast.NodeTransformer):
            def visit_Name(self, n):
                return copy.deepcopy(names[n.id]) if n.id in names and isinstance(n.ctx, ast.Load) else n

        return Sub().visit(out)

    def _json(self, tree, counter) -> list:
        kind = tree[0]
        if kind == "slot":
            node = tree[1]
            if id(node) in self.values:
                return ["val", self.values[id(node)]]
            if id(node) in self.literal_slots:
                params = self._param_names(node)
                text = ast.unparse(self._substituted(node))
                return ["param", text, sorted(params)] if params else ["lit", text]
            counter[0] += 1
            return ["leaf", counter[0] - 1]
        if kind == "cmp":
            return ["cmp", [x if isinstance(x, str) else self._json(x, counter) for x in tree[1]]]
        if kind in ("and", "or"):
            return [kind, [self._json(x, counter) for x in tree[1]]]
        if kind == "not":
            return ["not", self._json(tree[1], counter)]
        if kind == "approx":
            return ["approx", self._json(tree[1], counter), {k: self._json(v, counter) for k, v in tree[2].items()}]
        if kind == "call":
            args = [self._json(x, counter) for x in tree[2]]
            kwargs = {k: self._json(v, counter) for k, v in tree[3].items()}
            return ["call", tree[1], args, kwargs]
        raise AssertionError(kind)

    def _param_names(self, node: ast.expr) -> set[str]:
        out = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                scope = self.scopes.resolve(n)
                if scope is not None and id(scope.node) in self.signatures and n.id in self.signatures[id(scope.node)][0]:
                    out.add(n.id)
        return out


def _parametrize(dec: ast.expr) -> tuple[list[str], list[list[ast.expr]]] | None:
    """The argument names and literal rows of `@pytest.mark.parametrize(...)` (None: another decorator,
    or rows that are not all literal tuples of the right width)."""
    if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "parametrize"):
        return None
    if len(dec.args) != 2 or any(k.arg != "ids" for k in dec.keywords) or not isinstance(dec.args[1], ast.List | ast.Tuple):
        return None
    first = dec.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        names = [n.strip() for n in first.value.split(",") if n.strip()]
    elif isinstance(first, ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                         for e in first.elts):
        names = [e.value for e in first.elts]
    else:
        return None
    rows = []
    for row in dec.args[1].elts:
        items = row.elts if len(names) > 1 and isinstance(row, ast.Tuple | ast.List) else [row] if len(names) == 1 else None
        if items is None or len(items) != len(names) or not all(is_literal(i) for i in items):
            return None
        rows.append(list(items))
    return names, rows


def _imports(stmt: ast.Import | ast.ImportFrom, code: str) -> bool:
    """Whether an import statement reaches module `code` (or is relative, so it might)."""
    if isinstance(stmt, ast.ImportFrom):
        return stmt.level > 0 or (stmt.module or "").split(".")[0] == code
    return any(a.name.split(".")[0] == code for a in stmt.names)


def rewrite(source: str, path: str, evaluate=None, code: str = "solution") -> Rewritten:
    """The observation test and host checks of the assert-style test module `source` at repo path `path`.

    `evaluate(imports, expressions) -> [encoded value or None]`, when given, computes the operands that
    depend on the test's imports alone (see _Rewrite.solution_free); `code` is the module under test."""
    rw = _Rewrite(source, path)
    rw.literal_names()
    if evaluate is not None:
        rw.solution_free(evaluate, code)
    rw.move_params()
    rw.move_loops()
    rw.drop_bindings()
    rw.drop_raises_imports()
    tests = _test_functions(rw.tree)
    holders = _site_holders(rw)
    table: dict[str, dict] = {}
    excluded: dict[str, str] = {}
    for qual, fn, _cls in tests:
        test_id = f"{path}::{qual}"
        if not _reaches_a_site(fn, holders, rw):
            excluded[test_id] = "holds no assertion the host can judge"
            if all(q == qual or f is not fn for q, f, _ in tests):
                rw.removed.add(id(fn))
            continue
        required = sorted(rw.collector.by_stmt[id(s)].index for s in _top_level(fn.body)
                          if id(s) in rw.collector.by_stmt)
        entry: dict = {"required": required}
        if rw.params.get(id(fn)):
            entry["params"] = {k: {n: ast.unparse(v) for n, v in row.items()} for k, row in rw.params[id(fn)].items()}
        table[test_id] = entry
    checks = {str(s.index): rw.check_of(s) for s in rw.collector.sites}
    out = _Emit(rw).visit(rw.tree)
    _insert_preamble(out)
    ast.fix_missing_locations(out)
    return Rewritten(ast.unparse(out) + "\n", checks, table, excluded, list(rw.collector.in_sandbox), rw.loop_tables)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements a test always reaches unless an earlier one raises: its body, and plain `with` bodies."""
    out = []
    for s in body:
        out.append(s)
        if isinstance(s, ast.With | ast.AsyncWith):
            out += _top_level(s.body)
    return out


def _site_holders(rw: _Rewrite) -> set[str]:
    """Names of functions (module-level or methods) that hold a site, directly or through a call."""
    funcs = {n.name: n for n in ast.walk(rw.tree) if isinstance(n, _FUNC)}
    direct = {name for name, fn in funcs.items() if any(id(s) in rw.collector.by_stmt for s in ast.walk(fn))}
    calls = {name: _calls(fn) for name, fn in funcs.items()}
    while True:
        more = {name for name in funcs if name not in direct and calls[name] & direct}
        if not more:
            return direct
        direct |= more


def _calls(fn: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
            out.add(n.attr)
    return out


def _reaches_a_site(fn, holders: set[str], rw: _Rewrite) -> bool:
    if any(id(s) in rw.collector.by_stmt for s in ast.walk(fn)):
        return True
    names = _calls(fn) | {a.arg for a in fn.args.args}  # a fixture that asserts counts too
    return bool(names & holders) or bool({"setUp", "setup_method"} & holders)


def _insert_preamble(tree: ast.Module) -> None:
    """Put the preamble after the docstring and `from __future__` imports (which must come first)."""
    at = 0
    while at < len(tree.body) and (
            (isinstance(tree.body[at], ast.Expr) and isinstance(tree.body[at].value, ast.Constant) and at == 0)
            or (isinstance(tree.body[at], ast.ImportFrom) and tree.body[at].module == "__future__")):
        at += 1
    tree.body[at:at] = ast.parse(PREAMBLE).body
