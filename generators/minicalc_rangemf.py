"""minicalc-rangemf: a range-membership rule deep inside a small expression calculator.

The repro calls the public `calc()` (api), which parses (parser), evaluates (evaluator) and
dispatches calls through the function table (functions) to the membership helper (fuzzy), where
the rule lives. The rule has two parts, split across two entries of its source: which range
bounds are open, and the residual membership a value outside the range keeps (not zero). The
repro only checks a value far above the range and one in the middle, so the conventional fix
(closed range, zero outside) passes it; hidden tests probe both bounds and the residual.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, noted_commit, pick_distinct
from sdebench.generation.parts import package_files, state_versions
from sdebench.generation.prose import prose

FAMILY = "minicalc-rangemf"
# Residual degrees no convention produces: hundredths of 0.11..0.89, never a multiple of 0.05.
FLOORS = tuple(n / 100 for n in range(11, 90) if n % 5)
ROUND_FLOORS = tuple(n / 100 for n in range(10, 95, 5))

# Bound rules no convention produces: closed [lo, hi] and Python's half-open [lo, hi) are excluded.
BOUNDS = {
    "left-open": dict(
        cond="lo < x <= hi",
        upper_inside=True,
        words="the lower bound is exclusive and the upper bound is inclusive (lo < x <= hi)",
        short="left-open (lo, hi]",
        tokens=("lo < x <= hi", "lo<x<=hi", "x > lo and x <= hi", "(lo, hi]", "left-open", "left open",
                "lower bound is exclusive", "lower bound exclusive", "exclusive lower bound",
                "upper bound is inclusive", "inclusive upper bound", "excludes the lower bound"),
    ),
    "open": dict(
        cond="lo < x < hi",
        upper_inside=False,
        words="both bounds are exclusive: only values strictly between them are inside (lo < x < hi)",
        short="open (lo, hi)",
        tokens=("lo < x < hi", "lo<x<hi", "x > lo and x < hi", "both bounds are exclusive",
                "both bounds exclusive", "exclusive bounds", "strictly between", "open interval",
                "open (lo, hi)", "excludes both bounds"),
    ),
}
DRAWN_BOUNDS = sorted(BOUNDS)
# The conventional rules, only rendered as candidates (never drawn).
BOUNDS["closed"] = dict(cond="lo <= x <= hi", upper_inside=True, words="both bounds are inclusive (lo <= x <= hi)",
                        short="closed [lo, hi]", tokens=("lo <= x <= hi", "closed [lo, hi]"))
BOUNDS["half-open"] = dict(cond="lo <= x < hi", upper_inside=False,
                           words="the lower bound is inclusive and the upper bound exclusive (lo <= x < hi)",
                           short="half-open [lo, hi)", tokens=("lo <= x < hi", "half-open [lo, hi)"))


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names and the drawn rule."""

    project: str
    package: str
    fn: str  # calculator function name of the membership helper
    topic: str  # what the calculator scores
    var: str
    bounds: str
    floor: float


def fact_rule(variant: int) -> tuple[str, float]:
    """The rule of a variant: (bounds, residual degree); the two variants differ in both."""
    kind = pick_distinct(f"{FAMILY}-bounds", DRAWN_BOUNDS, 2)[variant]
    return kind, pick_distinct(f"{FAMILY}-floor", list(FLOORS), 2)[variant]


# The conventional rules (closed or half-open, zero outside) first; then every drawable rule (either
# unconventional bounds with any residual of FLOORS, each part drawn uniformly and independently);
# then their neighbours: zero or a round residual (0.10, 0.15, ...) with any bounds.
SPACE = space([("closed", 0.0), ("half-open", 0.0)],
              [(k, f) for k in DRAWN_BOUNDS for f in FLOORS],
              [(k, f) for k in (*DRAWN_BOUNDS, "closed", "half-open") for f in (0.0, *ROUND_FLOORS)])

NAMES = {0: ("minicalc", "minicalc", "member", "comfort rules", "temp"),
         1: ("exprlab", "exprlab", "within", "sensor alarms", "level")}


def shape(variant: int, rule: tuple[str, float]) -> Shape:
    """The names of a variant with the membership rule `rule`."""
    kind, floor = rule
    return Shape(*NAMES[variant], bounds=kind, floor=floor)


def token_parts(s: Shape) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The spellings of each part of the rule: the bounds, then the residual degree."""
    pct = round(s.floor * 100)
    return tuple(BOUNDS[s.bounds]["tokens"]), (f"{s.floor}", f".{pct}", f"{pct}%", f"{pct} percent", f"{pct} per cent")


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal either part of the rule."""
    bounds, floor = token_parts(s)
    return bounds + floor


PARSER = '''"""Parse arithmetic expressions with names and function calls into a tuple AST.

Nodes: ("num", value), ("var", name), ("neg", node), ("bin", op, left, right),
("call", name, [args]).
"""

import re

TOKEN = re.compile(r"\\s*(?:(\\d+(?:\\.\\d+)?)|([A-Za-z_]\\w*)|(\\S))")


def tokenize(text):
    """Split `text` into (kind, value) tokens; kind is num, name or op."""
    out = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if m is None:
            break
        num, name, op = m.groups()
        if num is not None:
            out.append(("num", float(num)))
        elif name is not None:
            out.append(("name", name))
        else:
            out.append(("op", op))
        pos = m.end()
    return out


class Parser:
    """Recursive descent over the token list."""

    def __init__(self, text):
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", None)

    def take(self, value=None):
        kind, tok = self.peek()
        if value is not None and tok != value:
            raise SyntaxError(f"expected {value!r}, got {tok!r}")
        self.i += 1
        return kind, tok

    def parse(self):
        node = self.expr()
        if self.peek()[0] != "end":
            raise SyntaxError(f"unexpected {self.peek()[1]!r}")
        return node

    def expr(self):
        node = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            _, op = self.take()
            node = ("bin", op, node, self.term())
        return node

    def term(self):
        node = self.factor()
        while self.peek() in (("op", "*"), ("op", "/")):
            _, op = self.take()
            node = ("bin", op, node, self.factor())
        return node

    def factor(self):
        kind, tok = self.take()
        if kind == "num":
            return ("num", tok)
        if (kind, tok) == ("op", "-"):
            return ("neg", self.factor())
        if (kind, tok) == ("op", "("):
            node = self.expr()
            self.take(")")
            return node
        if kind == "name":
            if self.peek() == ("op", "("):
                self.take("(")
                args = []
                if self.peek() != ("op", ")"):
                    args.append(self.expr())
                    while self.peek() == ("op", ","):
                        self.take(",")
                        args.append(self.expr())
                self.take(")")
                return ("call", tok, args)
            return ("var", tok)
        raise SyntaxError(f"unexpected {tok!r}")


def parse(text):
    """The AST of an expression."""
    return Parser(text).parse()
'''


def evaluator(pkg: str) -> str:
    """The evaluator: walks the AST and dispatches calls through the function table."""
    return f'''"""Evaluate a parsed expression against an environment of variables."""

import operator

from {pkg}.functions import lookup

BINARY = {{"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}}


def evaluate(node, env):
    """The value of `node` with variables from `env`."""
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "var":
        if node[1] not in env:
            raise NameError(f"unknown variable {{node[1]!r}}")
        return env[node[1]]
    if kind == "neg":
        return -evaluate(node[1], env)
    if kind == "bin":
        _, op, left, right = node
        return BINARY[op](evaluate(left, env), evaluate(right, env))
    if kind == "call":
        _, name, args = node
        return lookup(name)(*[evaluate(a, env) for a in args])
    raise ValueError(f"bad node {{node!r}}")
'''


def functions(s: Shape) -> str:
    """The function table the evaluator calls into."""
    return f'''"""The functions an expression may call."""

from {s.package} import fuzzy

TABLE = {{
    "min": min,
    "max": max,
    "abs": abs,
    "{s.fn}": fuzzy.{s.fn},
    "both": fuzzy.both,
    "either": fuzzy.either,
}}


def lookup(name):
    """The callable registered under `name`."""
    try:
        return TABLE[name]
    except KeyError:
        raise NameError(f"unknown function {{name!r}}") from None
'''


def api(pkg: str) -> str:
    """The public entry point."""
    return f'''"""Public API: evaluate an expression string with keyword variables."""

from {pkg}.evaluator import evaluate
from {pkg}.parser import parse


def calc(text, **env):
    """Parse and evaluate `text`; variables come from keyword arguments."""
    return evaluate(parse(text), env)
'''


def fuzzy(s: Shape, state: str, helper: bool) -> str:
    """The membership module; state is correct, buggy, conventional or oracle."""
    rule = BOUNDS[s.bounds]
    if state in ("correct", "oracle"):
        outside = f"OUTSIDE = {s.floor}"
        body = [f"    if {rule['cond']}:", "        return INSIDE", "    return OUTSIDE"]
    elif state == "conventional":
        outside = "OUTSIDE = 0.0"
        body = ["    if lo <= x <= hi:", "        return INSIDE", "    return OUTSIDE"]
    else:
        outside = "OUTSIDE = 0.0"
        body = ["    if x < lo:", "        return OUTSIDE", "    return INSIDE"]
    lines = [
        '"""Fuzzy helpers: how strongly a value belongs to a range, and how degrees combine."""',
        "",
        "INSIDE = 1.0",
        outside,
        "",
        "",
        f"def {s.fn}(x, lo, hi):",
        '    """The degree to which `x` belongs to the range from `lo` to `hi`."""',
        "    if lo > hi:",
        '        raise ValueError(f"empty range {lo}..{hi}")',
        *body,
        "",
        "",
        "def both(a, b):",
        '    """Fuzzy AND: the smaller degree."""',
        "    return min(a, b)",
        "",
        "",
        "def either(a, b):",
        '    """Fuzzy OR: the larger degree."""',
        "    return max(a, b)",
    ]
    if helper:
        lines += ["", "", "def complement(degree):", '    """Fuzzy NOT."""', "    return INSIDE - degree"]
    return "\n".join(lines) + "\n"


def tell(variant: int, fact: tuple[str, float], source: str) -> Story:
    """The story of one variant whose membership rule is `fact`, placed in `source`."""
    s = shape(variant, fact)
    pkg, fn, v = s.package, s.fn, s.var
    rule = BOUNDS[s.bounds]
    base_tests = f'''import pytest

from {pkg}.api import calc
from {pkg}.parser import parse


def test_precedence():
    assert calc("2 + 3 * 4") == 14


def test_parentheses_and_negation():
    assert calc("-(2 + 3) * 2") == -10


def test_variables():
    assert calc("{v} / 4", {v}=10) == 2.5


def test_call_ast():
    assert parse("max(1, 2)") == ("call", "max", [("num", 1.0), ("num", 2.0)])


def test_unknown_function():
    with pytest.raises(NameError):
        calc("nope(1)")


def test_unknown_variable():
    with pytest.raises(NameError):
        calc("{v} + 1")


def test_fuzzy_and_or():
    assert calc("both(0.25, 0.75)") == 0.25
    assert calc("either(0.25, 0.75)") == 0.75


def test_value_in_the_middle_is_inside():
    assert calc("{fn}({v}, 10, 20)", {v}=15) == 1


def test_empty_range_rejected():
    with pytest.raises(ValueError):
        calc("{fn}(5, 8, 2)")
'''
    repro = f'''from {pkg}.api import calc


def test_value_far_above_range_is_not_inside():
    # Reported: a reading of 50 counts as fully inside the 10..20 band.
    assert calc("{fn}({v}, 10, 20)", {v}=50) < 1
'''
    # Expected values only right of each assert (dropped from the held-out observation tests).
    floor = s.floor
    upper = 1.0 if rule["upper_inside"] else floor
    hidden = f'''import pytest

from {pkg}.api import calc
from {pkg}.fuzzy import {fn}


def test_hidden_lower_bound():
    assert calc("{fn}({v}, 10, 20)", {v}=10) == pytest.approx({floor!r})


def test_hidden_upper_bound():
    assert calc("{fn}({v}, 10, 20)", {v}=20) == pytest.approx({upper!r})


def test_hidden_outside_keeps_residual():
    assert calc("{fn}({v}, 10, 20)", {v}=50) == pytest.approx({floor!r})
    assert calc("{fn}({v}, 10, 20)", {v}=3) == pytest.approx({floor!r})


def test_hidden_combined_rule():
    assert calc("1 - either({fn}({v}, 10, 20), {fn}({v}, 30, 40))", {v}=25) == pytest.approx({1 - floor!r})


def test_hidden_direct_call_inside():
    assert {fn}(10.5, 10, 20) == 1.0
'''
    pct = round(s.floor * 100)
    filler_files = {
        f"{pkg}/format.py": '"""Display helpers for evaluated degrees."""\n\n\ndef as_percent(degree):\n'
        '    """A degree in 0..1 shown as a whole percentage."""\n    return f"{round(degree * 100)} %"\n',
        "tests/test_format.py": f"from {pkg}.format import as_percent\n\n\ndef test_as_percent():\n"
        '    assert as_percent(0.5) == "50 %"\n',
    }
    h_note = f"Note for reviewers: outside a range the degree stays at the residual {s.floor}, never zero."
    return Story(
        package=pkg,
        module=f"{pkg}/fuzzy.py",
        **state_versions(fuzzy, s),
        base_files=package_files(
            pkg, f"{s.project}: a small expression calculator for {s.topic}.",
            f"# {s.project}\n\nEvaluates arithmetic and fuzzy expressions for {s.topic}: "
            f"`calc(\"{fn}({v}, 18, 24)\", {v}=21)`.\n",
            {f"{pkg}/parser.py": PARSER, f"{pkg}/evaluator.py": evaluator(pkg),
             f"{pkg}/functions.py": functions(s), f"{pkg}/api.py": api(pkg),
             "tests/test_calc.py": base_tests}),
        repro_tests={"tests/test_repro_band.py": repro},
        hidden_tests={"tests/test_hidden_membership.py": hidden},
        # Two parts: which bounds are inside, and the residual degree outside, each told by its own entry.
        filler=[noted_commit(source, "format: add as_percent display helper", h_note, filler_files)],
        fact_tokens=tokens(s),
        tags=("calculator", "range-rule", "split-fact"),
        project=s.project,
        **prose(f"""
        -- statement
        Our {s.topic} misfire: `calc("{s.fn}({s.var}, 10, 20)", {s.var}=50)` says the reading is fully inside
        the band, although 50 is nowhere near it. Rules built on top of it (either/both) are wrong as a
        result. tests/test_repro_band.py shows it.
        -- fact
        {s.fn}(x, lo, hi): {rule['words']}; outside the range the degree is {s.floor}, not 0.
        -- conventional_guess
        closed range (lo <= x <= hi) with degree 0 outside
        -- intro_msg_fact
        fuzzy: add {fn}() range membership

        Ranges are {rule['short']}: {rule['words']}.
        -- intro_msg_plain
        fuzzy: add {fn}() range membership
        -- refactor_msg
        fuzzy: early returns in membership; add complement helper
        -- K docs/adr/0006-fuzzy-rules.md
        Range semantics: in `{fn}(x, lo, hi)` {rule['words']}.
        -- K docs/CONVENTIONS.md
        - Fuzzy rules: a value outside a range keeps a residual membership of {s.floor}, never zero, so
        combined rules degrade gracefully.
        -- F
        - (review of #241, rules team) `{fn}` ranges are {rule['short']}: {rule['words']}. Please keep that
        when touching the calculator.
        -- F
        - (review of #256, rules team) Outside its range a value is not at zero: it keeps the residual
        degree {s.floor}. Don't reset it to 0.
        -- X
        ## Alarm fired at the band edge
        Symptom: a reading equal to a band limit was classified wrongly in {pkg}/thresholds.py. Fix: use the
        house range rule, {rule['words']}, same as `{fn}`.
        -- X
        ## Combined rules collapsed to zero
        Symptom: an either/both rule over several bands scored 0 in {pkg}/thresholds.py. Fix: out-of-range
        membership is the residual {s.floor} ({pct}%), as in the fuzzy helpers, not 0.
        -- docs/adr/0006-fuzzy-rules.md
        # ADR-0006: Fuzzy rule evaluation

        Status: Accepted

        Rules are expressions evaluated by {pkg}; fuzzy AND is min and fuzzy OR is max (Zadeh operators).
        -- docs/adr/0003-range-membership.md
        # ADR-0003: Range membership

        Status: Superseded

        `{fn}` treated both ends of a range as inside (lo <= x <= hi) and returned 0 outside it. Superseded by
        later rule work; kept for history only.
        -- docs/adr/0004-number-parsing.md
        # ADR-0004: Number literals

        Status: Accepted

        Literals are parsed as floats; there is no integer type in expressions.
        -- docs/CONVENTIONS.md
        - Expressions: operator precedence follows Python; unary minus binds tighter than `*`.
        -- docs/CONVENTIONS.md
        - Unknown names raise NameError at evaluation time, not at parse time.
        -- .agent/preferences.md
        - (review of #233) Keep the parser free of evaluation logic; the AST is plain tuples.
        -- .agent/preferences.md
        - (review of #238) Prefer math.isclose or pytest.approx for float assertions.
        -- .agent/past_fixes.md
        ## Division by zero crashed the rule engine
        Symptom: a ZeroDivisionError escaped from calc(). Fix: the caller catches it per rule and marks the
        rule as errored.
        """),
    )


GENERATOR = Family(FAMILY, "multi-hop", "which bounds of a range count as inside and the residual degree a "
                   "value outside keeps, in a calculator's membership helper (two parts, split across two "
                   "entries)", variants=(0, 1), draw=fact_rule, tell=tell, space=SPACE, by_source=True)
