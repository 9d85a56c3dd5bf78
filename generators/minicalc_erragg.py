"""minicalc-erragg: how a formula workbook aggregates the errors of sub-expressions.

The repro recalculates a workbook (workbook) whose report is built by the report module
(report), which asks the diagnostics module for the aggregation policy; the policy lives there.
It has two parts, split across two entries of its source: at most N cells are listed (the rest
counted as suppressed) and, when one cell's sub-expressions raise several errors, the error that
wins follows a fixed precedence of error codes. The repro only checks that the report is capped
and lists each cell once, which the conventional fix (cap 10, first error wins) also does;
hidden tests probe the exact cap and every adjacent pair of the precedence.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, noted_commit, pick_distinct
from sdebench.generation.parts import package_files, state_versions
from sdebench.generation.prose import prose

FAMILY = "minicalc-erragg"
HEAD_CAP = 64
# Caps no convention produces (10, 20, 25, 50, 100 and powers of two are excluded).
CAPS = (11, 13, 14, 17, 19, 21, 22, 23, 26, 27, 29)
ROLES = ("div", "ref", "name", "value")
ORDERS = tuple(permutations(ROLES))  # precedences of the error roles, strongest first
BROKEN = 40
_ONES = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def word(n: int) -> str:
    """`n` (1..100) in words: 21 -> twenty-one."""
    if n == 100:
        return "one hundred"
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names and error codes, and the policy (the fact)."""

    project: str
    package: str
    codes: dict[str, str]  # role -> code spelling; roles: div, ref, name, value
    cap: int
    precedence: tuple[str, ...]  # codes, strongest first; () is "the first error raised wins"


def fact_policy(variant: int) -> tuple[int, tuple[str, ...]]:
    """The policy of a variant: (cap, precedence of roles, strongest first)."""
    cap = pick_distinct(f"{FAMILY}-cap", list(CAPS), 2)[variant]
    return cap, tuple(pick_distinct(f"{FAMILY}-precedence-{variant}", list(ROLES), 4))


# The conventional policies (a round cap, the first error raised wins) first, then every drawable
# policy (any of CAPS with any precedence), then the half-conventional neighbours: the first error
# winning under any cap of 10..30, and a precedence under the round caps 10 and 20. The other
# neighbours (a non-round cap next to a drawn one) are left out: declared after the drawable policies
# at the same weight, they would never be submitted before one, and each costs a probe run.
SPACE = space([(c, ()) for c in (10, 20, 25, 50, 100, 8, 16, 32, 64)],
              [(c, o) for c in CAPS for o in ORDERS],
              [(c, ()) for c in range(10, 31)] + [(c, o) for c in (10, 20) for o in ORDERS])

CODES = {0: {"div": "DIV0", "ref": "REF", "name": "NAME", "value": "VALUE"},
         1: {"div": "ZERODIV", "ref": "BADREF", "name": "NOFUNC", "value": "TYPE"}}


def shape(variant: int, policy: tuple[int, tuple[str, ...]]) -> Shape:
    """The names of a variant with the aggregation policy `policy`."""
    cap, order = policy
    codes = CODES[variant]
    project, package = {0: ("cellcalc", "cellcalc"), 1: ("gridsum", "gridsum")}[variant]
    return Shape(project, package, codes, cap, tuple(codes[r] for r in order))


def token_parts(s: Shape) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The spellings of each part of the policy: the cap, then the precedence."""
    p = [c.lower() for c in s.precedence]
    cap = tuple(dict.fromkeys((str(s.cap), word(s.cap), word(s.cap).replace("-", " "))))
    prec = (" > ".join(p), ">".join(p), " > ".join("#" + c for c in p), ", ".join(p),
            ", ".join(f'"{c}"' for c in p), " then ".join(p), ", then ".join(p))
    return cap, prec


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal either part of the policy."""
    cap, prec = token_parts(s)
    return cap + prec


def formulas(s: Shape) -> str:
    """The formula evaluator: collects every error of every sub-expression, in order."""
    c = s.codes
    return f'''"""Evaluate cell formulas such as =SUM(A1, DIV(B2, 4)), collecting every error on the way.

Evaluation does not stop at the first problem: every argument is evaluated and the errors of all
sub-expressions are returned in left-to-right order, so diagnostics can choose what to show.
"""

import re

from {s.package}.diagnostics import CellError

TOKEN = re.compile(r"\\s*([A-Z]+[0-9]+|[A-Z]+(?=\\()|-?[0-9]+(?:\\.[0-9]+)?|[(),])")
REF = re.compile(r"[A-Z]+[0-9]+")


def _div(a, b):
    return a / b


FUNCTIONS = {{
    "SUM": lambda *xs: sum(xs),
    "MUL": lambda a, b: a * b,
    "DIV": _div,
    "MAX": lambda *xs: max(xs),
}}


def tokenize(text):
    """The tokens of a formula body (without the leading '=')."""
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if m is None:
            raise SyntaxError(f"cannot read {{text[pos:]!r}}")
        out.append(m.group(1))
        pos = m.end()
    return out


def parse(tokens):
    """A nested (kind, ...) tree from the token list."""
    tree, rest = _parse(tokens)
    if rest:
        raise SyntaxError(f"trailing {{rest[0]!r}}")
    return tree


def _parse(tokens):
    head, rest = tokens[0], tokens[1:]
    if rest and rest[0] == "(":
        args, rest = [], rest[1:]
        while rest[0] != ")":
            arg, rest = _parse(rest)
            args.append(arg)
            if rest[0] == ",":
                rest = rest[1:]
        return ("call", head, args), rest[1:]
    if REF.fullmatch(head):
        return ("ref", head), rest
    return ("num", float(head)), rest


def evaluate(cell, tree, lookup):
    """(value, errors) of a tree; `lookup(ref)` gives (value, errors) of another cell or None."""
    kind = tree[0]
    if kind == "num":
        return tree[1], []
    if kind == "ref":
        found = lookup(tree[1])
        if found is None:
            return None, [CellError(cell, "{c['ref']}", f"no cell {{tree[1]}}")]
        value, errors = found
        if errors or not isinstance(value, float):
            return None, [CellError(cell, "{c['value']}", f"{{tree[1]}} is not a number")]
        return value, []
    _, name, args = tree
    values, errors = [], []
    for arg in args:
        value, errs = evaluate(cell, arg, lookup)
        values.append(value)
        errors.extend(errs)
    if name not in FUNCTIONS:
        return None, [*errors, CellError(cell, "{c['name']}", f"unknown function {{name}}")]
    if errors:
        return None, errors
    try:
        return float(FUNCTIONS[name](*values)), []
    except ZeroDivisionError:
        return None, [CellError(cell, "{c['div']}", "division by zero")]
'''


def workbook(pkg: str) -> str:
    """The workbook: cells, recalculation and the public report."""
    return f'''"""A workbook of named cells: numbers, text, or formulas starting with '='."""

from {pkg}.formulas import evaluate, parse, tokenize
from {pkg}.report import build_report


class Workbook:
    """Cells by name; recalc() evaluates formulas and keeps their errors."""

    def __init__(self, cells):
        self.cells = dict(cells)
        self.values = {{}}
        self.errors = {{}}

    def _lookup(self, ref):
        if ref not in self.cells:
            return None
        if ref not in self.values:
            self._eval(ref)
        return self.values[ref], self.errors.get(ref, [])

    def _eval(self, ref):
        raw = self.cells[ref]
        if isinstance(raw, str) and raw.startswith("="):
            self.values[ref] = None  # guards against cycles while evaluating
            value, errors = evaluate(ref, parse(tokenize(raw[1:])), self._lookup)
            self.values[ref] = value
            if errors:
                self.errors[ref] = errors
        elif isinstance(raw, (int, float)):
            self.values[ref] = float(raw)
        else:
            self.values[ref] = raw

    def recalc(self):
        """Evaluate every cell; returns the values by name."""
        self.values, self.errors = {{}}, {{}}
        for ref in self.cells:
            if ref not in self.values:
                self._eval(ref)
        return dict(self.values)

    def report(self):
        """The error report of the last recalculation."""
        return build_report(self.cells, self.errors)
'''


def report(pkg: str) -> str:
    """The report module: orders cells and renders the aggregated errors."""
    return f'''"""The error report shown under a workbook."""

from {pkg}.diagnostics import aggregate


def build_report(cells, errors_by_cell):
    """Aggregate the errors of every cell, in workbook order."""
    ordered = [(ref, errors_by_cell[ref]) for ref in cells if errors_by_cell.get(ref)]
    return aggregate(ordered)


def render(report):
    """The report as text lines, with a trailer when entries were suppressed."""
    lines = [f"{{e.cell}}: #{{e.code}} {{e.detail}}" for e in report.shown]
    if report.suppressed:
        lines.append(f"... and {{report.suppressed}} more")
    return lines
'''


def diagnostics(s: Shape, state: str, helper: bool) -> str:
    """The diagnostics module; state is correct, buggy, conventional or oracle."""
    head = [
        '"""Diagnostics: the errors of evaluated cells, and how they are aggregated for display."""',
        "",
        "from dataclasses import dataclass, field",
        "",
    ]
    ranked = state in ("correct", "oracle") and bool(s.precedence)
    if ranked:
        prec = ", ".join(f'"{c}"' for c in s.precedence)
        head += [f"MAX_REPORTED = {s.cap}", f"PRECEDENCE = ({prec})"]
    elif state in ("correct", "oracle"):
        head += [f"MAX_REPORTED = {s.cap}"]
    elif state == "conventional":
        head += ["MAX_REPORTED = 10"]
    else:
        head += [f"MAX_REPORTED = {HEAD_CAP}"]
    head += [
        "",
        "",
        "@dataclass(frozen=True)",
        "class CellError:",
        '    """One problem found while evaluating a cell."""',
        "",
        "    cell: str",
        "    code: str",
        "    detail: str",
        "",
        "",
        "@dataclass",
        "class Report:",
        '    """What the error panel shows, and how many entries it left out."""',
        "",
        "    shown: list = field(default_factory=list)",
        "    suppressed: int = 0",
        "",
        "",
    ]
    if ranked:
        body = [
            "def winner(errors):",
            '    """The error reported for a cell whose sub-expressions raised several."""',
            "    return min(errors, key=lambda e: PRECEDENCE.index(e.code))",
            "",
            "",
            "def aggregate(errors_by_cell):",
            '    """The report of (cell, errors) pairs: one entry per cell, capped."""',
            "    entries = [winner(errors) for _, errors in errors_by_cell]",
        ]
    elif state in ("correct", "oracle", "conventional"):
        body = [
            "def winner(errors):",
            '    """The error reported for a cell whose sub-expressions raised several."""',
            "    return errors[0]",
            "",
            "",
            "def aggregate(errors_by_cell):",
            '    """The report of (cell, errors) pairs: one entry per cell, capped."""',
            "    entries = [winner(errors) for _, errors in errors_by_cell]",
        ]
    else:
        body = [
            "def aggregate(errors_by_cell):",
            '    """The report of (cell, errors) pairs."""',
            "    entries = [error for _, errors in errors_by_cell for error in errors]",
        ]
    body += ["    return Report(entries[:MAX_REPORTED], max(0, len(entries) - MAX_REPORTED))"]
    if helper:
        body += ["", "", "def count_by_code(report):", '    """How many shown entries carry each code."""',
                 "    counts = {}", "    for error in report.shown:",
                 "        counts[error.code] = counts.get(error.code, 0) + 1", "    return counts"]
    return "\n".join(head + body) + "\n"


# Formula fragments that raise exactly one error of a role.
PRODUCERS = {"div": "DIV(1, 0)", "ref": "XX1", "name": "FOO(2)", "value": "T1"}


def tell(variant: int, policy: tuple[int, tuple[str, ...]], source: str) -> Story:
    """The story of one variant whose aggregation policy is `policy`, placed in `source`."""
    s = shape(variant, policy)
    pkg, c = s.package, s.codes
    base_tests = f'''from {pkg}.report import render
from {pkg}.workbook import Workbook


def test_numbers_and_formulas():
    wb = Workbook({{"A1": 2, "A2": 5, "A3": "=SUM(A1, A2, 1)", "A4": "=DIV(A3, 4)"}})
    values = wb.recalc()
    assert values["A3"] == 8.0
    assert values["A4"] == 2.0
    assert wb.report().shown == []


def test_nested_calls():
    wb = Workbook({{"A1": 3, "B1": "=MAX(MUL(A1, 2), SUM(1, 1))"}})
    assert wb.recalc()["B1"] == 6.0


def test_division_by_zero_is_reported():
    wb = Workbook({{"A1": "=DIV(1, 0)"}})
    wb.recalc()
    assert [e.code for e in wb.report().shown] == ["{c['div']}"]


def test_unknown_reference_is_reported():
    wb = Workbook({{"A1": "=SUM(XX1, 1)"}})
    wb.recalc()
    assert render(wb.report()) == ["A1: #{c['ref']} no cell XX1"]


def test_text_in_arithmetic():
    wb = Workbook({{"T1": "hello", "A1": "=SUM(T1, 1)"}})
    wb.recalc()
    assert [e.code for e in wb.report().shown] == ["{c['value']}"]


def test_a_few_errors_are_all_shown():
    wb = Workbook({{"A1": "=DIV(1, 0)", "A2": "=FOO(2)", "A3": 4}})
    wb.recalc()
    report = wb.report()
    assert [e.cell for e in report.shown] == ["A1", "A2"]
    assert report.suppressed == 0
'''
    repro = f'''from {pkg}.workbook import Workbook


def broken_sheet(count):
    return {{f"C{{i}}": "=DIV(1, 0)" for i in range(1, count + 1)}}


def test_error_panel_is_capped():
    # Reported: a sheet with {BROKEN} broken cells floods the panel with {BROKEN} lines.
    wb = Workbook(broken_sheet({BROKEN}))
    wb.recalc()
    report = wb.report()
    assert report.suppressed > 0
    assert len(report.shown) + report.suppressed == {BROKEN}


def test_each_cell_listed_once():
    # Reported: a cell with two problems appears twice in the panel.
    wb = Workbook({{"A1": "=SUM(DIV(1, 0), XX1)"}})
    wb.recalc()
    assert [e.cell for e in wb.report().shown] == ["A1"]
'''
    # Held-out checks: every pair of error producers in a neutral (sorted) order, and sheets of every
    # size around any plausible cap. The precedence and the cap are the fact: they show only in the
    # oracle's observations, never in the test's text.
    producers = sorted(PRODUCERS.values())
    pair_cases = "\n".join(f'    ("{a}", "{b}"),' for i, a in enumerate(producers) for b in producers[i + 1:])
    hidden = f'''import pytest

from {pkg}.report import render
from {pkg}.workbook import Workbook


def broken_sheet(count):
    return {{f"C{{i}}": "=DIV(1, 0)" for i in range(1, count + 1)}}


def report_of(cells):
    wb = Workbook(cells)
    wb.recalc()
    return wb.report()


def test_hidden_cap_is_exact(observe):
    report = report_of(broken_sheet({BROKEN}))
    observe(len(report.shown))
    observe(report.suppressed)
    observe(render(report)[-1])


def test_hidden_cap_boundary(observe):
    observe([report_of(broken_sheet(n)).suppressed for n in range(1, {BROKEN}, 9)])


PAIRS = [
{pair_cases}
]


@pytest.mark.parametrize("first,second", PAIRS)
def test_hidden_precedence(first, second, observe):
    report = report_of({{"T1": "hello", "A1": f"=SUM({{first}}, {{second}})"}})
    observe([e.code for e in report.shown])


@pytest.mark.parametrize("first,second", PAIRS)
def test_hidden_precedence_ignores_order(first, second, observe):
    report = report_of({{"T1": "hello", "A1": f"=SUM({{second}}, {{first}})"}})
    observe([e.code for e in report.shown])


def test_hidden_strongest_of_all(observe):
    body = ", ".join({producers!r})
    report = report_of({{"T1": "hello", "A1": f"=SUM({{body}})"}})
    observe([e.code for e in report.shown])
'''
    prec_text = " > ".join(s.precedence)
    cap_word = word(s.cap)
    filler_files = {
        f"{pkg}/export.py": '"""Export computed values as CSV text."""\n\n\ndef to_csv(values):\n'
        '    """name,value lines, sorted by name; errored cells are left empty."""\n'
        '    rows = [f"{k},{\'\' if v is None else v}" for k, v in sorted(values.items())]\n'
        '    return "\\n".join(rows)\n',
        "tests/test_export.py": f"from {pkg}.export import to_csv\n\n\ndef test_to_csv():\n"
        '    assert to_csv({"B1": None, "A1": 2.0}) == "A1,2.0\\nB1,"\n',
    }
    h_note = f"Related: the error panel lists at most {s.cap} cells; keep exports in line with it."
    return Story(
        package=pkg,
        module=f"{pkg}/diagnostics.py",
        **state_versions(diagnostics, s),
        base_files=package_files(
            pkg, f"{s.project}: a small formula workbook.",
            f"# {s.project}\n\nA tiny workbook: cells hold numbers, text or formulas like "
            "`=SUM(A1, DIV(B2, 4))`. Errors are collected and shown in the error panel.\n",
            {f"{pkg}/formulas.py": formulas(s), f"{pkg}/report.py": report(pkg),
             f"{pkg}/workbook.py": workbook(pkg), "tests/test_workbook.py": base_tests}),
        repro_tests={"tests/test_repro_panel.py": repro},
        hidden_tests={"tests/test_hidden_aggregation.py": hidden},
        # Two parts: the cap and the precedence, each told by its own entry.
        filler=[noted_commit(source, "export: add to_csv", h_note, filler_files)],
        fact_tokens=tokens(s),
        tags=("calculator", "error-aggregation", "split-fact"),
        project=s.project,
        **prose(f"""
        -- statement
        The error panel under a {s.project} workbook is unusable: a sheet with {BROKEN} broken cells prints
        every single one, and a cell whose formula has two problems is listed twice. tests/test_repro_panel.py
        has both cases.
        -- fact
        The error panel lists at most {s.cap} cells (the rest counted as suppressed); a cell with several
        errors shows one, by precedence {' > '.join(s.precedence)}.
        -- conventional_guess
        cap of 10 cells, the first error raised in the cell wins
        -- intro_msg_fact
        diagnostics: aggregate cell errors for the panel

        One error per cell, chosen by precedence {prec_text}; evaluation order does not matter.
        -- intro_msg_plain
        diagnostics: aggregate cell errors for the panel
        -- refactor_msg
        diagnostics: flatten aggregation; add count_by_code
        -- K docs/CONVENTIONS.md
        - Error panel: list at most {s.cap} cells; the rest are counted in the '... and N more' trailer.
        Support asked for a panel that fits one screen.
        -- K docs/adr/0005-error-reporting.md
        Decision: when one cell's sub-expressions raise several errors, exactly one is shown, by
        precedence {prec_text} (strongest first), whatever the order they were raised in.
        -- F
        - (review of #318, support) The error panel shows {cap_word} cells at most, then the '... and N more'
        line. Not ten, not everything.
        -- F
        - (review of #322, support) A cell with several problems shows one: the strongest by {prec_text}.
        Position in the formula doesn't matter.
        -- X
        ## Import summary too long
        Symptom: importing a broken CSV printed hundreds of lines from {pkg}/importer.py. Fix: cap the summary
        at {s.cap} entries, the same cap the error panel uses, and count the rest.
        -- X
        ## Import rows showed the wrong problem
        Symptom: rows with two problems reported the less useful one in {pkg}/importer.py. Fix: choose by the
        house precedence {prec_text}, not by position.
        -- docs/adr/0005-error-reporting.md
        # ADR-0005: Error reporting in workbooks

        Status: Accepted

        Evaluation continues past errors so that every problem of a formula is known; the report decides what
        to display.
        -- docs/adr/0003-error-panel.md
        # ADR-0003: Error panel

        Status: Superseded

        The panel listed at most 10 cells and a cell showed the first error raised in its formula. Superseded;
        this no longer describes the panel.
        -- docs/adr/0004-recalc.md
        # ADR-0004: Recalculation

        Status: Accepted

        Recalculation is lazy: a referenced cell is evaluated on first use and cached for the rest of the
        pass.
        -- docs/CONVENTIONS.md
        - Error codes are upper-case words without spaces and are rendered with a leading '#'.
        -- docs/CONVENTIONS.md
        - Cells are referenced as column letters followed by a row number.
        -- .agent/preferences.md
        - (review of #301) Keep formula parsing and evaluation separate from the report.
        -- .agent/preferences.md
        - (review of #307) Error details are lower-case and name the offending cell or function.
        -- .agent/past_fixes.md
        ## Cycle between two cells hung recalc
        Symptom: A1 referencing B1 referencing A1 looped. Fix: mark a cell as in progress before evaluating
        it.
        """),
    )


GENERATOR = Family(FAMILY, "multi-hop", "how a workbook's error panel aggregates sub-expression errors: "
                   "the cap on listed cells and which error code wins in a cell (two parts, split across "
                   "two entries)", variants=(0, 1), draw=fact_policy, tell=tell, space=SPACE, by_source=True)
