"""The host side of imported BugsInPy tests: their assertions, judged here on observed plain values.

An imported test file is rewritten (sdebench.interop.bugsinpy_observe) so that each assertion
becomes an *event*: the test, inside the sandbox, evaluates only the operands that depend on the
code (the *leaves*) and observes them; the assertion itself (its operators, its literal expected
values, the exception type a `pytest.raises` block expects, its `match` pattern) stays in a
*check* kept on the host and is evaluated here, on decoded plain data, after the sandbox exited.

A leaf is observed as `("v", value)` (plain data: compared here by Python's own operators, so
`5 == 5.0` holds as it does in the original assert), `("o", truth)` (any other object: only its
truth and its identity with None can be judged; any comparison of it fails, since its `__eq__`
is the submission's), or `("e",)` (evaluating it raised). A `raises` block is observed as
`("r", lineage, message)` (the exception's single line of exception classes, builtins named by
identity, anything else as `other:module.qualname`; a class with two unrelated exception bases
has no lineage) or `("n",)` when nothing was raised.

Literal values (constants, containers of them, `Decimal("1.20")`, `pytest.approx(0.3)`, ...) are
evaluated here by a small evaluator of a fixed vocabulary (no `eval`, bounded sizes); values the
test computes from its own imports alone (`"a" + os.sep + "b"`) were computed once at import, in
a sandbox without the code under test, and are stored encoded.
"""

from __future__ import annotations

import ast
import builtins
import datetime
import operator
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from sdebench.errors import InteropError
from sdebench.grading.rules import values_match

FORMAT = "bugsinpy-checks-1"
MAX_SIZE = 1 << 20  # elements or characters a literal may build
MAX_MATCH_TEXT = 10_000  # characters of an exception message searched by a `match` pattern
OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
       ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
       "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitOr: operator.or_,
        ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
BUILTIN_EXCEPTIONS = frozenset(k for k, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException))


class NotLiteral(InteropError, ValueError):
    """An expression the host evaluator does not evaluate (it is not a bounded literal)."""


def _approx(*args, **kwargs):
    import pytest

    return pytest.approx(*args, **kwargs)


# Value constructors a literal may call (by name, or as an attribute: `decimal.Decimal(...)`).
CONSTRUCTORS = {"Decimal": Decimal, "date": datetime.date, "datetime": datetime.datetime, "time": datetime.time,
                "timedelta": datetime.timedelta, "Fraction": Fraction, "set": set, "frozenset": frozenset,
                "tuple": tuple, "list": list, "dict": dict, "float": float, "int": int, "str": str, "bytes": bytes,
                "bool": bool, "approx": _approx}


def call_name(node: ast.AST) -> str | None:
    """The called name of a Call (`f(...)` or `a.b.f(...)`), else None."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _sized(value):
    try:
        n = len(value)
    except TypeError:
        return value
    if n > MAX_SIZE:
        raise NotLiteral("literal too large")
    return value


def literal_value(node: ast.AST, names: dict[str, ast.AST] | None = None) -> Any:
    """The value of a literal expression; `names` binds names to literal expressions. NotLiteral otherwise."""
    names = names or {}
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return literal_value(names[node.id], {})
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        raise NotLiteral(f"name {node.id}")
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = [literal_value(e, names) for e in node.elts]
        return _sized({ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items))
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotLiteral("dict unpacking")
        return {literal_value(k, names): literal_value(v, names) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](literal_value(node.operand, names))
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        a, b = literal_value(node.left, names), literal_value(node.right, names)
        _bounded_binop(node.op, a, b)
        return _sized(_BIN[type(node.op)](a, b))
    if isinstance(node, ast.Subscript):
        return literal_value(node.value, names)[literal_value(node.slice, names)]
    if isinstance(node, ast.Call) and call_name(node) in CONSTRUCTORS:
        args = [literal_value(a, names) for a in node.args]
        kwargs = {k.arg: literal_value(k.value, names) for k in node.keywords if k.arg}
        if len(kwargs) != len(node.keywords):
            raise NotLiteral("keyword unpacking")
        return CONSTRUCTORS[call_name(node)](*args, **kwargs)
    raise NotLiteral(type(node).__name__)


def _bounded_binop(op: ast.operator, a, b) -> None:
    """Refuse operations whose result could be huge (a literal is small by nature)."""
    if isinstance(op, ast.Pow) and isinstance(b, int) and (abs(b) > 4096 or (isinstance(a, int) and abs(a) > 2 ** 64)):
        raise NotLiteral("power too large")
    if isinstance(op, ast.Mult):
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, str | bytes | list | tuple) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_SIZE:
                raise NotLiteral("repetition too large")


def is_literal(node: ast.AST, names: dict[str, ast.AST] | None = None) -> bool:
    """Whether `node` is a literal the host evaluates (evaluating it raises nothing)."""
    try:
        literal_value(node, names)
    except NotLiteral:
        return False
    except Exception:  # noqa: BLE001 - a literal that raises (1/0, Decimal("x")) is left to the test as written
        return False
    return True


# --- decoding observed values (the runner's encoding, sdebench/grading/_runner.py) -----------------
class Undecodable(InteropError, ValueError):
    """An observation that is not a well-formed plain encoding."""


def decode(enc) -> Any:
    """The plain value an encoding stands for (Undecodable for anything else)."""
    if not isinstance(enc, list) or not enc or not isinstance(enc[0], str):
        raise Undecodable(repr(enc)[:80])
    tag, rest = enc[0], enc[1:]
    try:
        if tag == "none":
            return None
        if tag == "bool" and isinstance(rest[0], bool):
            return rest[0]
        if tag == "int":
            return int(rest[0])
        if tag == "float":
            return float(rest[0])
        if tag == "str" and isinstance(rest[0], str):
            return rest[0]
        if tag == "bytes":
            return bytes.fromhex(rest[0])
        if tag == "Decimal":
            return Decimal(rest[0])
        if tag in ("date", "datetime", "time"):
            return {"date": datetime.date, "datetime": datetime.datetime, "time": datetime.time}[tag].fromisoformat(rest[0])
        if tag == "timedelta":
            d, s, us = (int(x) for x in rest[0])
            return datetime.timedelta(days=d, seconds=s, microseconds=us)
        if tag in ("list", "tuple", "set", "frozenset"):
            items = [decode(x) for x in rest[0]]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict":
            return {decode(k): decode(v) for k, v in rest[0]}
    except (IndexError, TypeError, ValueError, InvalidOperation, OverflowError) as e:
        raise Undecodable(f"{tag}: {e}") from None
    raise Undecodable(f"tag {tag!r}")


class Opaque:
    """A leaf that was not plain data: it has a truth value and is not None; comparing it fails."""

    __slots__ = ("truth",)

    def __init__(self, truth: bool):
        self.truth = truth

    def __bool__(self) -> bool:
        return self.truth

    def _refuse(self, *_):
        raise TypeError("a value that is not plain data cannot be compared on the host")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __contains__ = __hash__ = _refuse
    __iter__ = __len__ = _refuse


class _Raised(InteropError):
    """A leaf whose evaluation raised: reaching it fails the check, as the original assert would."""


def leaf_value(enc) -> Any:
    """The value of one observed leaf: plain value, Opaque, or a raised marker (Undecodable if malformed)."""
    if not isinstance(enc, list) or enc[:1] != ["tuple"] or not isinstance(enc[1], list) or not enc[1]:
        raise Undecodable("a leaf is a tuple")
    parts = enc[1]
    kind = decode(parts[0])
    if kind == "v" and len(parts) == 2:
        return decode(parts[1])
    if kind == "o" and len(parts) == 2 and isinstance(truth := decode(parts[1]), bool):
        return Opaque(truth)
    if kind == "e" and len(parts) == 1:
        return _Raised
    raise Undecodable(f"leaf kind {kind!r}")


# --- evaluating a check ------------------------------------------------------------------------
def _parsed(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _value(node: list, leaves: list, row: dict[str, str]) -> Any:
    """The value of an operand node: a leaf, a literal (of this instance's parametrize row) or an approx."""
    kind = node[0]
    if kind == "leaf":
        v = leaves[node[1]]
        if v is _Raised:
            raise _Raised
        return v
    if kind == "lit":
        return literal_value(_parsed(node[1]))
    if kind == "val":  # computed once, without the code under test
        return decode(node[1])
    if kind == "param":
        return literal_value(_parsed(node[1]), {n: _parsed(row[n]) for n in node[2]})
    if kind == "approx":
        kwargs = {k: _value(v, leaves, row) for k, v in node[2].items()}
        return _approx(_value(node[1], leaves, row), **kwargs)
    return _truth_tree(node, leaves, row)


def _truth_tree(node: list, leaves: list, row: dict[str, str]) -> Any:
    """Evaluate a boolean tree with Python's short-circuit rules (returns the deciding operand)."""
    kind = node[0]
    if kind == "cmp":
        chain = node[1]
        left = _value(chain[0], leaves, row)
        for i in range(1, len(chain), 2):
            right = _value(chain[i + 1], leaves, row)
            if not OPS[chain[i]](left, right):
                return False
            left = right
        return True
    if kind in ("and", "or"):
        result: Any = kind == "and"
        for part in node[1]:
            result = _value(part, leaves, row)
            if bool(result) is (kind == "or"):
                return result
        return result
    if kind == "not":
        return not _value(node[1], leaves, row)
    if kind == "call":  # a unittest assertion the host implements
        kwargs = {k: _value(v, leaves, row) for k, v in node[3].items()}
        return _CALLS[node[1]](*[_value(a, leaves, row) for a in node[2]], **kwargs)
    return _value(node, leaves, row)


def _almost(first, second, places=None, delta=None, expect=True) -> bool:
    if first == second:
        return expect
    diff = abs(first - second)
    ok = diff <= delta if delta is not None else round(diff, 7 if places is None else places) == 0
    return ok is expect


def _count_equal(first, second) -> bool:
    try:
        return Counter(first) == Counter(second)
    except TypeError:  # unhashable items: compare as sorted lists where they sort
        a, b = list(first), list(second)
        return len(a) == len(b) and all(a.count(x) == b.count(x) for x in a)


def _regex(text, pattern, expect=True) -> bool:
    if not isinstance(text, str) or not isinstance(pattern, str):
        return False
    return (re.search(pattern, text[:MAX_MATCH_TEXT]) is not None) is expect


_CALLS = {
    "almost": lambda a, b, places=None, delta=None: _almost(a, b, places, delta),
    "not_almost": lambda a, b, places=None, delta=None: _almost(a, b, places, delta, expect=False),
    "count_equal": _count_equal,
    "regex": lambda text, pattern: _regex(text, pattern),
    "not_regex": lambda text, pattern: _regex(text, pattern, expect=False),
}


def check_holds(check: dict, event: list, row: dict[str, str] | None = None) -> bool:
    """Whether one observed event satisfies its check (`row`: the instance's parametrize values); never raises."""
    try:
        if check["kind"] == "raises":
            return _raises_holds(check, event)
        leaves = [leaf_value(e) for e in event]
        if len(leaves) != check["leaves"]:
            return False
        return bool(_truth_tree(check["expr"], leaves, row or {}))
    except Exception:  # noqa: BLE001 - anything unexpected fails the check (default-fail)
        return False


def _raises_holds(check: dict, event: list) -> bool:
    if len(event) != 1:
        return False
    rec = event[0]
    if not isinstance(rec, list) or rec[:1] != ["tuple"]:
        return False
    parts = rec[1]
    kind = decode(parts[0])
    if kind != "r" or len(parts) != 3:
        return False
    lineage, message = decode(parts[1]), decode(parts[2])
    if not isinstance(lineage, tuple) or not all(isinstance(x, str) for x in lineage):
        return False
    if not any(_is_a(lineage, t) for t in check["types"]):
        return False
    pattern = check.get("match")
    if pattern is None:
        return True
    return isinstance(message, str) and _regex(message, literal_value(_parsed(pattern)))


def _is_a(lineage: tuple, expected: str) -> bool:
    """Whether an exception with this lineage is an instance of the class the test names `expected`."""
    name = expected.rsplit(".", 1)[-1]
    if expected in BUILTIN_EXCEPTIONS or (expected.startswith("builtins.") and name in BUILTIN_EXCEPTIONS):
        return f"builtins.{name}" in lineage
    return any(x.startswith("other:") and x.rsplit(".", 1)[-1] == name for x in lineage)


# --- one test instance -------------------------------------------------------------------------
def row_of(entry: dict, instance: str) -> dict[str, str]:
    """The parametrize values the host holds for one test instance (`...[c0_1-...]`: case keys)."""
    params = entry.get("params") or {}
    if not params or "[" not in instance:
        return {}
    out: dict[str, str] = {}
    for part in instance.split("[", 1)[1].rstrip("]").split("-"):
        out.update(params.get(part, {}))
    return out


def events_of(observations: list | tuple | None) -> list[tuple[int, list]] | None:
    """The (site index, leaves) events of one test's observations; None if any is malformed."""
    if observations is None:
        return None
    out = []
    for enc in observations:
        if not isinstance(enc, list) or enc[:1] != ["tuple"] or not isinstance(enc[1], list) or not enc[1]:
            return None
        head = enc[1][0]
        if not (isinstance(head, list) and head[:1] == ["int"]):
            return None
        try:
            out.append((int(head[1]), enc[1][1:]))
        except (IndexError, TypeError, ValueError):
            return None
    return out


def _same_as_oracle(check: dict, event: list, oracle_event: list) -> bool:
    """Whether an event gives the oracle's leaf values, type-strictly (a raises event is judged by its check)."""
    if check["kind"] == "raises":
        return True
    if len(event) != len(oracle_event):
        return False
    for got, want in zip(event, oracle_event, strict=True):
        try:
            g_kind, w_kind = decode(got[1][0]), decode(want[1][0])
        except (Undecodable, IndexError, TypeError):
            return False
        if g_kind != w_kind:
            return False
        if g_kind == "v" and not values_match(want[1][1], got[1][1]):
            return False
        if g_kind != "v" and got != want:
            return False
    return True


def split_rows(event: list, loops: dict[str, list[dict[str, str]]]) -> tuple[dict[str, str], list] | None:
    """The literal-loop values an event's row markers select, and its remaining parts (None: malformed)."""
    row: dict[str, str] = {}
    while event and isinstance(event[0], list) and event[0][:1] == ["tuple"]:
        try:
            marker = decode(event[0])
        except Undecodable:
            return None
        if not (isinstance(marker, tuple) and marker[:1] == ("row",)):
            break
        if len(marker) != 3 or not isinstance(marker[2], int) or not 0 <= marker[2] < len(loops.get(str(marker[1]), [])):
            return None
        row.update(loops[str(marker[1])][marker[2]])
        event = event[1:]
    return row, event


def judge(checks: dict[str, dict], required: list[int], outcome: str, observations, oracle: list | None = None,
          row: dict[str, str] | None = None, loops: dict | None = None) -> bool:
    """Whether one test instance passed: it ran to a pass, observed only well-formed events of its
    file's checks, every check held (`row`: its parametrize values; `loops`: the literal loops' rows an
    event names), every required check was observed, at least one was; and, with an oracle, each event
    gave the oracle's values in the oracle's order."""
    if outcome != "passed":
        return False
    events = events_of(observations)
    if not events:
        return False
    seen = set()
    for j, event in events:
        check, parts = checks.get(str(j)), split_rows(event, loops or {})
        if check is None or parts is None or not check_holds(check, parts[1], {**(row or {}), **parts[0]}):
            return False
        seen.add(j)
    if not set(required) <= seen:
        return False
    if oracle is not None:
        want = events_of(oracle)
        if want is None or len(want) != len(events):
            return False
        for (j, event), (k, oracle_event) in zip(events, want, strict=True):
            if j != k or not _same_as_oracle(checks[str(j)], event, oracle_event):
                return False
    return True

