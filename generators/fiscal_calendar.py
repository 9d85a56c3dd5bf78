"""fiscal-calendar: fiscal quarters and years follow a house start date and a house naming rule.

Three-part fact: the month the fiscal year starts in (never January, April, July or October), the
day of that month it starts on (never the 1st: like the UK tax year's 6 April), and whether a fiscal
year is named after the calendar year in which it starts or in which it ends. HEAD uses calendar
quarters and the other naming; the repro only requires mid-January to be outside Q1, which an
April start (the usual non-calendar guess) also satisfies. Hidden tests read the quarter, year and
label of every day of a year, the same days whatever the fact.
"""

from __future__ import annotations

import calendar
import itertools
import random
from dataclasses import dataclass
from datetime import date

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import RUNS_SOURCE, Story, pick_distinct
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "fiscal-calendar"
CONV_MONTH = 4  # the usual non-calendar guess (UK, Japan, India)
# May is left out (its name is a common English word), and so are the months whose fiscal year puts
# mid-January in Q1 (the repro would pass at HEAD's calendar quarters' month).
MONTHS = (2, 3, 6, 8, 9)
DAYS = range(2, 29)  # the start day: never the 1st, and a day every month has
NAMINGS = ("start", "end")
ABBREV = {m: (calendar.month_abbr[m].lower(),) for m in range(1, 13)} | {9: ("sep", "sept")}
REPRO = date(2025, 1, 15)
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


Fact = tuple[int, int, str]  # (start month, start day, naming)


def fact_of(variant: int) -> Fact:
    """The start month, start day and naming rule ('start' or 'end'); the variants differ in month and naming."""
    # One shuffled order per family, indexed by variant, so variants never share the month.
    order = pick_distinct(f"{FAMILY}-months", list(MONTHS), len(MONTHS))
    month = order[variant % len(order)]
    day = random.Random(f"{FAMILY}-day-{variant}").choice(list(DAYS))
    flip = random.Random(f"{FAMILY}-naming").random() < 0.5
    return month, day, NAMINGS[(variant % 2) ^ flip]


# Rule 7: fiscal years starting on the 1st of a quarter month, or on the UK tax year's 6 April, first;
# then every drawable date and naming; then every day 1..28 of every month with either naming (the
# hidden tests read every day of a year, so each start date behaves differently).
CONVENTIONAL = [(m, d, n) for m, d in ((4, 1), (1, 1), (7, 1), (10, 1), (4, 6)) for n in NAMINGS]
SPACE = space(CONVENTIONAL, itertools.product(MONTHS, DAYS, NAMINGS),
              itertools.product(range(1, 13), range(1, 29), NAMINGS))


def rule_module(s: Shape, fact: Fact, label: bool) -> str:
    """The fiscal module; `label` adds the refactor's period_label()."""
    month, day, naming = fact
    text = f'''"""Fiscal periods for {s.report} reports: fiscal years, quarters and labels."""

from datetime import date

FY_START_MONTH = {month}
FY_START_DAY = {day}  # the fiscal year starts on this day of FY_START_MONTH
FY_NAMED_FOR = "{naming}"  # which calendar year names a fiscal year: the one it "start"s or "end"s in


def fiscal_year(d: date) -> int:
    """The fiscal year `d` falls in, as its label."""
    first = d.year if (d.month, d.day) >= (FY_START_MONTH, FY_START_DAY) else d.year - 1
    if FY_NAMED_FOR == "end" and (FY_START_MONTH, FY_START_DAY) != (1, 1):
        return first + 1
    return first


def fiscal_quarter(d: date) -> int:
    """The fiscal quarter (1-4) `d` falls in."""
    months = (d.month - FY_START_MONTH - (d.day < FY_START_DAY)) % 12
    return months // 3 + 1
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


def ordinal(n: int) -> str:
    """1st, 2nd, 23rd, 11th."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def tokens(fact: Fact) -> tuple[str, ...]:
    """Every spelling that would reveal the start month, the start day or the naming rule."""
    start, day, naming = fact
    name = calendar.month_name[start].lower()
    month = (name, *ABBREV[start], f"fy_start_month = {start}", f"fy_start_month={start}",
             f"month {start}", f"-{start:02d}-{day:02d}")
    days = (f"fy_start_day = {day}", f"fy_start_day={day}", f"{day} {name}", f"{ordinal(day)} of",
            f"{name} {day}", f"{start}/{day}", f"{day}/{start}", f"{day}.{start}.")
    return month + days + NAMING[naming]


def tell(variant: int, fact: Fact) -> Story:
    """The story of one variant whose (start month, start day, naming) is `fact`."""
    s = SHAPES[variant]
    start, day, naming = fact
    # HEAD: calendar quarters and the other naming (of the variant's drawn fact, so HEAD never changes).
    head_naming = "end" if fact_of(variant)[2] == "start" else "start"
    pkg = s.package
    month_name = calendar.month_name[start]
    begins = f"{day} {month_name}"
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


def test_mid_january_is_not_first_quarter():
    # Reported: the Q1 report includes mid-January {s.report}; finance books them elsewhere.
    assert fiscal_quarter(date({REPRO.year}, {REPRO.month}, {REPRO.day})) != 1
'''
    # Held-out checks walk every day of a year, so no input singles out the start date (the
    # fact); the answers are recorded from the oracle, run-length encoded (the same information).
    hidden = f'''from datetime import date, timedelta

from {pkg}.report import by_quarter
from {pkg}.{s.module} import fiscal_quarter, fiscal_year, period_label

FIRSTS = [date(y, m, 1) for y in (2025, 2026) for m in range(1, 13)]
DAYS = [date(2025, 1, 1) + timedelta(days=n) for n in range(365)]


{RUNS_SOURCE}

def test_hidden_quarters(observe):
    observe(runs([fiscal_quarter(d) for d in DAYS]))


def test_hidden_year_labels(observe):
    observe(runs([fiscal_year(d) for d in DAYS]))


def test_hidden_period_labels(observe):
    observe(runs([period_label(d) for d in DAYS]))


def test_hidden_report_keys(observe):
    observe(list(by_quarter([(d, "5") for d in FIRSTS])))
'''
    rule = "the calendar year in which it starts" if naming == "start" else "the calendar year in which it ends"
    short = "start year" if naming == "start" else "end year"
    return Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        **rule_versions(lambda f, later: rule_module(s, f, label=later), fact, (1, 1, head_naming),
                        (CONV_MONTH, 1, head_naming)),
        base_files=package_files(pkg, f"{s.project}: {s.report} reports by fiscal period.",
                                 f"# {s.project}\n\n"
                                 f"Quarterly {s.report} reports.\n",
                                 {f"{pkg}/report.py": report_module(s), "tests/test_report.py": base_tests}),
        repro_tests={"tests/test_repro_quarter.py": repro},
        hidden_tests={"tests/test_hidden_fiscal.py": hidden},
        filler=[Commit("export: write quarterly totals as CSV", {f"{pkg}/export.py": EXPORT})],
        fact_tokens=tokens(fact),
        tags=("dates", "fiscal-calendar", "multi-part-rule"),
        project=s.project,
        **prose(f"""
        -- statement
        The quarterly {s.report} report does not match finance's books: entries dated in mid-January show up
        in the first quarter, and the fiscal-year labels on the report look off too.
        tests/test_repro_quarter.py reproduces the quarter problem.
        -- fact
        The fiscal year starts on {begins} and is named after the calendar year in which
        it {'starts' if naming == 'start' else 'ends'}.
        -- conventional_guess
        FY_START_MONTH = {CONV_MONTH} (April), naming unchanged
        -- intro_msg_fact
        {s.module}: fiscal years and quarters

        The fiscal year begins on {begins} and is named after {rule}, as finance books it.
        -- intro_msg_plain
        {s.module}: fiscal years and quarters
        -- refactor_msg
        {s.module}: add period_label; simplify the year arithmetic
        -- K docs/CONVENTIONS.md
        - Fiscal calendar: the fiscal year begins on {begins}; Q1 is the three months from then. A fiscal year
        is named after {rule}.
        -- F
        - (review of #97, finance) Our fiscal year starts on {begins}, not in January or April nor on the 1st,
        and FY labels use the {short} (the calendar year in which
        it {'starts' if naming == 'start' else 'ends'}). Please keep reports aligned with that.
        -- X
        ## Budget periods off by a quarter
        Symptom: the budget export put spending in the wrong quarter and year. Fix: budgets.py now starts the
        fiscal year on {begins} and names it after {rule}, as every report here does.
        -- docs/adr/0003-fiscal-year.md
        # ADR-0003: Fiscal year

        Status: Superseded

        The fiscal year started on 1 April, like the parent company's. Superseded when the group changed its
        reporting calendar; do not use for new reports.
        -- docs/adr/0004-week-numbers.md
        # ADR-0004: Week numbers

        Status: Accepted

        Weekly charts use ISO week numbers; weeks start on Monday.
        -- docs/CONVENTIONS.md
        - Dates are `datetime.date`; timestamps are converted to the company time zone first.
        -- docs/CONVENTIONS.md
        - Reports label periods like FY2024-Q2; never spell out quarter names.
        -- .agent/preferences.md
        - (review of #85) Totals are Decimals; do not sum floats in reports.
        -- .agent/preferences.md
        - (review of #91) Empty quarters are omitted from the report, not shown as zero.
        -- .agent/past_fixes.md
        ## Leap-day crash
        Symptom: a report crashed on a leap day. Fix: never build dates by replacing the year of another date;
        construct them from parts.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the date the fiscal year starts on (month and day) and "
                   "whether a fiscal year is named after its start or its end year (three-part rule)",
                   variants=(0, 1), draw=fact_of, tell=tell, space=SPACE)
