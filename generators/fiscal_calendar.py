"""fiscal-calendar: fiscal quarters and years follow a house start month and a house naming rule.

Two-part fact: the month the fiscal year starts in (never January, April, July or October) and
whether a fiscal year is named after the calendar year in which it starts or in which it ends.
HEAD uses calendar quarters and the other naming; the repro only requires one early month to be
outside Q1, which an April start (the usual non-calendar guess) also satisfies. Hidden tests pin
the start month at the quarter boundaries and the naming on a fiscal-year label.
"""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass
from datetime import date

from sdebench.generation.kit import ADR_DIR, CONVENTIONS, Story, assemble
from sdebench.generation.spec import Commit
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

FAMILY = "fiscal-calendar"
CONV_MONTH = 4  # the usual non-calendar guess (UK, Japan, India)
MONTHS = (2, 3, 6, 8, 9, 11, 12)  # May is left out: its name is a common English word
ABBREV = {2: ("feb",), 3: ("mar",), 6: ("jun",), 8: ("aug",), 9: ("sep", "sept"), 11: ("nov",), 12: ("dec",)}
NAMING = {
    "start": ("year in which it starts", "year in which it begins", "year it starts", "year it begins",
              "starting year", "start year", "named after its start", "named for its start"),
    "end": ("year in which it ends", "year in which it closes", "year it ends", "year it closes",
            "ending year", "end year", "named after its end", "named for its end"),
}


@dataclass(frozen=True)
class Shape:
    """What differs between variants: the domain and names."""

    project: str
    package: str
    module: str
    report: str  # what the periods group


SHAPES = {
    0: Shape("salesbook", "salesbook", "fiscal", "sales"),
    1: Shape("grantdesk", "grantdesk", "periods", "grant spending"),
}


def quarter(d: date, start: int) -> int:
    """The fiscal quarter of `d` for a year starting in month `start`."""
    return (d.month - start) % 12 // 3 + 1


def fy(d: date, start: int, naming: str) -> int:
    """The fiscal-year label of `d`."""
    first = d.year if d.month >= start else d.year - 1
    return first + 1 if naming == "end" and start != 1 else first


def fact_of(variant: int) -> tuple[int, str]:
    """The start month and the naming rule ('start' or 'end'); the two variants differ in both."""
    # One shuffled order per family, indexed by variant, so variants never share the month.
    order = random.Random(f"{FAMILY}-months").sample(MONTHS, len(MONTHS))
    month = order[variant % len(order)]
    flip = random.Random(f"{FAMILY}-naming").random() < 0.5
    return month, ("start", "end")[(variant % 2) ^ flip]


def repro_month(start: int) -> int:
    """An early month that is Q1 under calendar quarters but not under the fact or the guess."""
    for m in (1, 2, 3):
        d = date(2025, m, 15)
        if quarter(d, start) != 1 and quarter(d, CONV_MONTH) != 1:
            return m
    raise ValueError(f"no repro month for start month {start}")


def rule_module(s: Shape, start: int, naming: str, label: bool) -> str:
    """The fiscal module; `label` adds the refactor's period_label()."""
    text = f'''"""Fiscal periods for {s.report} reports: fiscal years, quarters and labels."""

from datetime import date

FY_START_MONTH = {start}
FY_NAMED_FOR = "{naming}"  # which calendar year names a fiscal year: the one it "start"s or "end"s in


def fiscal_year(d: date) -> int:
    """The fiscal year `d` falls in, as its label."""
    first = d.year if d.month >= FY_START_MONTH else d.year - 1
    if FY_NAMED_FOR == "end" and FY_START_MONTH != 1:
        return first + 1
    return first


def fiscal_quarter(d: date) -> int:
    """The fiscal quarter (1-4) `d` falls in."""
    return (d.month - FY_START_MONTH) % 12 // 3 + 1
'''
    if label:
        text += '''

def period_label(d: date) -> str:
    """The report label of `d`, e.g. FY2025-Q3."""
    return f"FY{fiscal_year(d)}-Q{fiscal_quarter(d)}"
'''
    return text


def report_module(s: Shape) -> str:
    """The report module grouping amounts by fiscal quarter (unchanged by the bug)."""
    return f'''"""Group dated {s.report} amounts by fiscal quarter."""

from collections import defaultdict
from decimal import Decimal

from {s.package}.{s.module} import fiscal_quarter, fiscal_year


def by_quarter(rows) -> dict:
    """Sum (date, amount) rows into {{(fiscal_year, quarter): total}}."""
    totals = defaultdict(lambda: Decimal("0"))
    for day, amount in rows:
        totals[(fiscal_year(day), fiscal_quarter(day))] += Decimal(str(amount))
    return dict(totals)
'''


EXPORT = '''"""CSV export of quarterly totals."""

import csv
import io


def to_csv(totals: dict) -> str:
    """Render {(fiscal_year, quarter): total} as CSV rows sorted by period."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["fiscal_year", "quarter", "total"])
    for (year, q), total in sorted(totals.items()):
        writer.writerow([year, q, f"{total:.2f}"])
    return out.getvalue()
'''


def tokens(start: int, naming: str) -> tuple[str, ...]:
    """Every spelling that would reveal the start month or the naming rule."""
    name = calendar.month_name[start].lower()
    month = (name, *ABBREV[start], f"fy_start_month = {start}", f"fy_start_month={start}",
             f"month {start}", f"-{start:02d}-01")
    return month + NAMING[naming]


def build_story(variant: int):
    """The story of one variant, its shape and fact."""
    s = SHAPES[variant]
    start, naming = fact_of(variant)
    head_naming = "end" if naming == "start" else "start"
    rm = repro_month(start)
    pkg = s.package
    month_name = calendar.month_name[start]
    base_tests = f'''from datetime import date
from decimal import Decimal

from {pkg}.report import by_quarter
from {pkg}.{s.module} import fiscal_quarter


def test_quarters_are_one_to_four():
    assert {{fiscal_quarter(date(2024, m, 1)) for m in range(1, 13)}} == {{1, 2, 3, 4}}


def test_each_quarter_has_three_months():
    quarters = [fiscal_quarter(date(2024, m, 1)) for m in range(1, 13)]
    assert all(quarters.count(q) == 3 for q in (1, 2, 3, 4))


def test_rows_in_the_same_day_are_summed():
    totals = by_quarter([(date(2024, 8, 8), "1.50"), (date(2024, 8, 8), "2.25")])
    assert list(totals.values()) == [Decimal("3.75")]
'''
    repro = f'''from datetime import date

from {pkg}.{s.module} import fiscal_quarter


def test_early_{calendar.month_name[rm].lower()}_is_not_first_quarter():
    # Reported: the Q1 report includes {calendar.month_name[rm]} {s.report}; finance books them elsewhere.
    assert fiscal_quarter(date(2025, {rm}, 15)) != 1
'''
    # Held-out checks walk the first and last day of every month of two years, so no input singles
    # out the start month (the fact); the answers are recorded from the oracle.
    hidden = f'''from datetime import date, timedelta

from {pkg}.report import by_quarter
from {pkg}.{s.module} import fiscal_quarter, fiscal_year, period_label

FIRSTS = [date(y, m, 1) for y in (2025, 2026) for m in range(1, 13)]
DAYS = FIRSTS + [d - timedelta(days=1) for d in FIRSTS] + [d + timedelta(days=19) for d in FIRSTS]


def test_hidden_quarters(observe):
    observe([fiscal_quarter(d) for d in DAYS])


def test_hidden_year_labels(observe):
    observe([fiscal_year(d) for d in DAYS])


def test_hidden_period_labels(observe):
    observe([period_label(d) for d in DAYS])


def test_hidden_report_keys(observe):
    observe(list(by_quarter([(d, "5") for d in FIRSTS])))
'''
    rule = "the calendar year in which it starts" if naming == "start" else "the calendar year in which it ends"
    short = "start year" if naming == "start" else "end year"
    fact_k = (CONVENTIONS, f"- Fiscal calendar: the fiscal year begins on 1 {month_name}; Q1 is the three months "
              f"from then. A fiscal year is named after {rule}.")
    fact_f = (PREFERENCES, f"- (review of #97, finance) Our fiscal year starts in {month_name}, not January or "
              f"April, and FY labels use the {short} (the calendar year in which it "
              f"{'starts' if naming == 'start' else 'ends'}). Please keep reports aligned with that.")
    fact_x = (PAST_FIXES, f"## Budget periods off by a quarter\nSymptom: the budget export put spending in the "
              f"wrong quarter and year. Fix: budgets.py now starts the fiscal year in {month_name} and names it "
              f"after {rule}, as every report here does.")
    distractors = [
        (f"{ADR_DIR}/0003-fiscal-year.md", "# ADR-0003: Fiscal year\n\nStatus: Superseded\n\nThe fiscal year "
         "started on 1 April, like the parent company's. Superseded when the group changed its reporting "
         "calendar; do not use for new reports."),
        (f"{ADR_DIR}/0004-week-numbers.md", "# ADR-0004: Week numbers\n\nStatus: Accepted\n\nWeekly charts use "
         "ISO week numbers; weeks start on Monday."),
        (CONVENTIONS, "- Dates are `datetime.date`; timestamps are converted to the company time zone first."),
        (CONVENTIONS, "- Reports label periods like FY2024-Q2; never spell out quarter names."),
        (PREFERENCES, "- (review of #85) Totals are Decimals; do not sum floats in reports."),
        (PREFERENCES, "- (review of #91) Empty quarters are omitted from the report, not shown as zero."),
        (PAST_FIXES, "## Leap-day crash\nSymptom: a report crashed on a leap day. Fix: never build dates by "
         "replacing the year of another date; construct them from parts."),
    ]
    story = Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        v1_correct=rule_module(s, start, naming, label=False),
        v1_buggy=rule_module(s, 1, head_naming, label=False),
        head_buggy=rule_module(s, 1, head_naming, label=True),
        oracle=rule_module(s, start, naming, label=True),
        conventional=rule_module(s, CONV_MONTH, head_naming, label=True),
        intro_msg_fact=f"{s.module}: fiscal years and quarters\n\nThe fiscal year begins on 1 {month_name} and is "
        f"named after {rule}, as finance books it.",
        intro_msg_plain=f"{s.module}: fiscal years and quarters",
        refactor_msg=f"{s.module}: add period_label; simplify the year arithmetic",
        base_files={
            f"{pkg}/__init__.py": f'"""{s.project}: {s.report} reports by fiscal period."""\n',
            f"{pkg}/report.py": report_module(s),
            "tests/test_report.py": base_tests,
            "README.md": f"# {s.project}\n\nQuarterly {s.report} reports.\n",
        },
        repro_tests={"tests/test_repro_quarter.py": repro},
        hidden_tests={"tests/test_hidden_fiscal.py": hidden},
        fact_entries={"K": fact_k, "F": fact_f, "X": fact_x},
        distractors=distractors,
        filler=[Commit("export: write quarterly totals as CSV", {f"{pkg}/export.py": EXPORT})],
    )
    return story, s, start, naming, rm


class FiscalCalendar:
    """Generator of the fiscal-calendar family."""

    family = FAMILY
    bottleneck = "knowledge-missing"
    variants = (0, 1)
    description = ("the month the fiscal year starts in and whether a fiscal year is named after its start or "
                   "its end year (two-part rule)")

    def build(self, variant: int, source: str):
        """Build one variant with the fact in `source`."""
        story, s, start, naming, rm = build_story(variant)
        return assemble(
            story,
            family=FAMILY,
            variant=variant,
            source=source,
            bottleneck=self.bottleneck,
            project=s.project,
            statement=(
                f"The quarterly {s.report} report does not match finance's books: entries dated in "
                f"{calendar.month_name[rm]} show up in the first quarter, and the fiscal-year labels on the report look off too. "
                f"tests/test_repro_quarter.py reproduces the quarter problem."
            ),
            fact=f"The fiscal year starts on 1 {calendar.month_name[start]} and is named after the calendar year "
            f"in which it {'starts' if naming == 'start' else 'ends'}.",
            fact_tokens=tokens(start, naming),
            conventional_guess=f"FY_START_MONTH = {CONV_MONTH} (April), naming unchanged",
            tags=("dates", "fiscal-calendar", "multi-part-rule"),
            description=self.description,
        )


GENERATOR = FiscalCalendar()
