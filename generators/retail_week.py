"""retail-week: where a business week starts, decided in a time helper below a weekly report.

The repro calls the weekly report (report), which groups items with the bucketing module
(buckets), which asks the time helper (timeutil) where the week containing a moment starts; the
rule lives there. At HEAD the helper forgets to move to the start of the day, so two moments of
the same week land in different buckets. The house week starts on a weekday and half hour no
convention uses (Tuesday to Friday, never midnight: 184 starts are drawn from). The repro only groups
a Saturday and a Sunday, which every such rule puts together; hidden tests sample every half hour.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import RUNS_SOURCE, Story, pick_distinct
from sdebench.generation.parts import package_files, state_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "retail-week"
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Weekdays (Python numbering) no convention starts a week on: not Monday, Saturday or Sunday.
START_DAYS = (1, 2, 3, 4)
# Start times (hour, minute) on the half hour, never midnight.
START_TIMES = tuple((h, m) for h in range(1, 24) for m in (0, 30))
# 2024-03-04 is a Monday; tests place moments relative to it.
MONDAY = (2024, 3, 4)


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names and the drawn week boundary."""

    project: str
    package: str
    item: str  # what the report counts
    day: int
    hour: int
    minute: int


def fact_start(variant: int) -> tuple[int, int, int]:
    """The week start of a variant: (weekday, hour, minute); weekday and time drawn independently."""
    day = pick_distinct(f"{FAMILY}-day", list(START_DAYS), 2)[variant]
    hour, minute = pick_distinct(f"{FAMILY}-time", list(START_TIMES), 2)[variant]
    return day, hour, minute


# The conventional starts (Monday, Sunday or Saturday midnight) first; then every drawable start
# (an unconventional weekday at any half hour but midnight); then every other weekday at any full hour.
SPACE = space([(0, 0, 0), (6, 0, 0), (5, 0, 0)],
              [(d, h, m) for d in START_DAYS for h, m in START_TIMES],
              [(d, h, 0) for d in range(7) for h in range(24)])
NAMES = {0: ("shiftplan", "shiftplan", "shift"), 1: ("bookingdesk", "bookingdesk", "booking")}


def shape(variant: int, start: tuple[int, int, int]) -> Shape:
    """The names of a variant whose business week starts at `start`."""
    return Shape(*NAMES[variant], *start)


def clock(s: Shape) -> str:
    """The start time as HH:MM."""
    return f"{s.hour:02d}:{s.minute:02d}"


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal the boundary (weekday or time of day)."""
    name = DAYS[s.day].lower()
    h, m = s.hour, s.minute
    h12 = f"{(h - 1) % 12 + 1}"
    half = "am" if h < 12 else "pm"
    times = (clock(s), f"{h}:{m:02d}", f"{h12}:{m:02d} {half}", f"{h12}:{m:02d}{half}", f"{h:02d}{m:02d}h",
             f"{h12}.{m:02d} {half}", f"week_start_hour = {h}", f"hours={h}, minutes={m}")
    if m == 0:
        times += (f"{h12} {half}", f"{h12}{half}", f"{h:02d}h", f"{h12} o'clock")
    else:
        times += (f"half past {h12}", f"half past {h}", f"week_start_minute = {m}")
    return (name, f"{name}s", name[:3], f"week_start_day = {s.day}", *times)


def timeutil(s: Shape, state: str, helper: bool) -> str:
    """The time helper; state is correct, buggy, conventional or oracle."""
    lines = ['"""Time helpers: where the business week containing a moment starts."""', "",
             "from datetime import timedelta", ""]
    if state in ("correct", "oracle"):
        lines += [f"WEEK_START_DAY = {s.day}  # {DAYS[s.day]}",
                  f"WEEK_START = timedelta(hours={s.hour}, minutes={s.minute})  # {clock(s)}", "", "",
                  "def week_start(moment):",
                  '    """The first moment of the business week that contains `moment` (naive local time)."""',
                  "    shifted = moment - WEEK_START",
                  "    day = shifted.replace(hour=0, minute=0, second=0, microsecond=0)",
                  "    day -= timedelta(days=(day.weekday() - WEEK_START_DAY) % 7)",
                  "    return day + WEEK_START"]
    elif state == "conventional":
        lines += ["WEEK_START_DAY = 0  # Monday", "", "",
                  "def week_start(moment):",
                  '    """The first moment of the business week that contains `moment` (naive local time)."""',
                  "    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)",
                  "    return day - timedelta(days=(day.weekday() - WEEK_START_DAY) % 7)"]
    else:
        lines += ["WEEK_START_DAY = 0  # Monday", "", "",
                  "def week_start(moment):",
                  '    """The first moment of the business week that contains `moment` (naive local time)."""',
                  "    return moment - timedelta(days=(moment.weekday() - WEEK_START_DAY) % 7)"]
    if helper:
        lines += ["", "", "def week_end(moment):", '    """The first moment of the following week."""',
                  "    return week_start(moment) + timedelta(days=7)"]
    return "\n".join(lines) + "\n"


def buckets(pkg: str) -> str:
    """The bucketing module."""
    return f'''"""Group timestamped items into business weeks."""

from {pkg}.timeutil import week_start


def bucket_key(moment):
    """The key of the week bucket `moment` falls into."""
    return week_start(moment)


def group_by_week(items, when):
    """Bucket key -> items, where `when(item)` gives an item's moment; keys in time order."""
    groups = {{}}
    for item in sorted(items, key=when):
        groups.setdefault(bucket_key(when(item)), []).append(item)
    return groups
'''


def report(s: Shape) -> str:
    """The report module: the public entry point."""
    if s.item == "shift":
        return f'''"""Weekly hours per person, for payroll."""

from dataclasses import dataclass
from datetime import datetime

from {s.package}.buckets import group_by_week


@dataclass(frozen=True)
class Shift:
    """One worked shift."""

    person: str
    start: datetime
    end: datetime

    @property
    def hours(self):
        """Length of the shift in hours."""
        return (self.end - self.start).total_seconds() / 3600


def weekly_hours(shifts):
    """Week start -> person -> hours, a shift counting in the week it starts in."""
    out = {{}}
    for week, items in group_by_week(shifts, lambda sh: sh.start).items():
        per = out.setdefault(week, {{}})
        for sh in items:
            if sh.end <= sh.start:
                raise ValueError(f"shift of {{sh.person}} ends before it starts")
            per[sh.person] = per.get(sh.person, 0) + sh.hours
    return out
'''
    return f'''"""Weekly booking counts per room, for the occupancy dashboard."""

from dataclasses import dataclass
from datetime import datetime

from {s.package}.buckets import group_by_week


@dataclass(frozen=True)
class Booking:
    """One room booking."""

    room: str
    start: datetime
    guests: int = 1


def weekly_counts(bookings):
    """Week start -> room -> number of bookings starting that week."""
    out = {{}}
    for week, items in group_by_week(bookings, lambda b: b.start).items():
        per = out.setdefault(week, {{}})
        for b in items:
            if b.guests < 1:
                raise ValueError(f"booking of {{b.room}} has no guests")
            per[b.room] = per.get(b.room, 0) + 1
    return out
'''


def tell(variant: int, start: tuple[int, int, int]) -> Story:
    """The story of one variant whose business week starts at `start` (weekday, hour, minute)."""
    s = shape(variant, start)
    pkg = s.package
    y, m, d = MONDAY
    if s.item == "shift":
        dt, names = "datetime, timedelta", "Shift, weekly_hours"
        make = ("def item(who, start, hours=2):\n    return Shift(who, start, start + timedelta(hours=hours))\n")
        run, key, one = "weekly_hours", "ann", "2.0"
        raises = 'Shift("ann", datetime(2024, 3, 6, 12), datetime(2024, 3, 6, 11))'
        bad = f"        weekly_hours([{raises}])"
    else:
        dt, names = "datetime", "Booking, weekly_counts"
        make = "def item(who, start):\n    return Booking(who, start)\n"
        run, key, one = "weekly_counts", "ann", "1"
        bad = '        weekly_counts([Booking("ann", datetime(2024, 3, 6, 12), guests=0)])'
    head = f"from datetime import {dt}\n\nfrom {pkg}.report import {names}\n"
    base_tests = f'''from datetime import {dt}

import pytest

from {pkg}.buckets import group_by_week
from {pkg}.report import {names}


{make}

def test_empty_report():
    assert {run}([]) == {{}}


def test_one_item():
    report = {run}([item("{key}", datetime(2024, 3, 7, 10))])
    [(week, per)] = report.items()
    assert per == {{"{key}": {one}}}
    assert week <= datetime(2024, 3, 7, 10)


def test_items_a_month_apart_are_in_different_weeks():
    report = {run}([item("{key}", datetime(2024, 3, 7, 10)), item("{key}", datetime(2024, 4, 4, 10))])
    assert len(report) == 2


def test_group_by_week_orders_items():
    a, b = datetime(2024, 3, 1, 9), datetime(2024, 2, 1, 9)
    groups = group_by_week([a, b], lambda x: x)
    assert [v for vs in groups.values() for v in vs] == [b, a]


def test_invalid_item_rejected():
    with pytest.raises(ValueError):
{bad}
'''
    repro = f'''{head}

{make}

def test_weekend_items_share_a_week():
    # Reported: a Saturday and the following Sunday show up as two separate weeks.
    sat, sun = datetime({y}, {m}, {d + 5}, 10), datetime({y}, {m}, {d + 6}, 15)
    report = {run}([item("{key}", sat), item("{key}", sun)])
    assert len(report) == 1
    [week] = report
    assert week <= sat
'''
    # Held-out checks sample every half hour (and the second before it) across eight days from a
    # Monday midnight, so no input singles out the boundary: the week start is the fact, and shows
    # only in the oracle's observations (run-length encoded: the same information, a fraction of
    # the encoding work in the probe and the grading).
    hidden = f'''from datetime import datetime, timedelta

from {pkg}.buckets import bucket_key
from {pkg}.timeutil import week_start

BASE = datetime({y}, {m}, {d})
MOMENTS = [BASE + timedelta(minutes=30 * k, seconds=s) for k in range(1, 8 * 48) for s in (-1, 0)]


{RUNS_SOURCE}

def test_hidden_week_start_of_every_half_hour(observe):
    observe(runs([week_start(t) for t in MOMENTS]))


def test_hidden_buckets_follow_the_week(observe):
    observe(runs([bucket_key(t) for t in MOMENTS[::7]]))


def test_hidden_week_start_is_idempotent(observe):
    observe([week_start(week_start(t)) for t in MOMENTS[::48]])
'''
    day, hm = DAYS[s.day], clock(s)
    filler_files = {
        f"{pkg}/export.py": '"""CSV export of weekly figures."""\n\n\ndef to_rows(report):\n'
        '    """(week ISO date, key, value) rows in time order."""\n'
        '    return [(week.date().isoformat(), k, v) for week, per in report.items() for k, v in sorted(per.items())]\n',
        "tests/test_export.py": f"from datetime import datetime\n\nfrom {pkg}.export import to_rows\n\n\n"
        "def test_to_rows():\n    report = {datetime(2024, 1, 2, 3): {\"b\": 2, \"a\": 1}}\n"
        '    assert to_rows(report) == [("2024-01-02", "a", 1), ("2024-01-02", "b", 2)]\n',
    }
    return Story(
        package=pkg,
        module=f"{pkg}/timeutil.py",
        **state_versions(timeutil, s),
        base_files=package_files(
            pkg, f"{s.project}: weekly {s.item} figures.",
            f"# {s.project}\n\nWeekly {s.item} figures for the stores, bucketed by business week.\n",
            {f"{pkg}/buckets.py": buckets(pkg), f"{pkg}/report.py": report(s),
             "tests/test_report.py": base_tests}),
        repro_tests={"tests/test_repro_weekend.py": repro},
        hidden_tests={"tests/test_hidden_week_boundary.py": hidden},
        filler=[Commit("export: weekly rows for CSV", filler_files)],
        fact_tokens=tokens(s),
        tags=("time", "calendar-rule"),
        project=s.project,
        **prose(f"""
        -- statement
        The weekly {s.item} report splits weeks apart: a {s.item} on Saturday morning and one on Sunday
        afternoon of the same weekend come out as two different weeks, so weekly totals are wrong. See
        tests/test_repro_weekend.py.
        -- fact
        The business week starts on {DAYS[s.day]} at {clock(s)} local time.
        -- conventional_guess
        Monday 00:00 (ISO week)
        -- intro_msg_fact
        timeutil: business week start

        Weeks start {day} {hm} local, when the weekly stock count closes.
        -- intro_msg_plain
        timeutil: business week start
        -- refactor_msg
        timeutil: shorten week_start; add week_end
        -- K docs/adr/0005-business-week.md
        Decision: the business week starts on {day} at {hm} local time, when the weekly stock count closes;
        reports bucket by that boundary.
        -- F
        - (review of #614, payroll) Our weeks are not ISO weeks: a week starts {day} {hm}, after the stock
        count. Please stop assuming Monday midnight.
        -- X
        ## Stock report split a week in two
        Symptom: the stock report in {pkg}/stock.py disagreed with payroll at week edges. Fix: bucket by the
        business week, {day} {hm} to {day} {hm}, like the other reports.
        -- docs/adr/0005-business-week.md
        # ADR-0005: Business weeks

        Status: Accepted

        All weekly figures use one business-week definition, owned by the time helpers; reports never compute
        weeks themselves.
        -- docs/adr/0003-week-definition.md
        # ADR-0003: Week definition

        Status: Superseded

        Weeks were ISO weeks, Monday 00:00 to Monday 00:00. Superseded by the business-week decision.
        -- docs/adr/0004-timezones.md
        # ADR-0004: Time zones

        Status: Accepted

        Times are naive local times of the site; conversion happens at the API edge.
        -- docs/CONVENTIONS.md
        - Weekly reports are keyed by the datetime at which the week starts.
        -- docs/CONVENTIONS.md
        - Durations are computed from datetimes, never from wall-clock strings.
        -- .agent/preferences.md
        - (review of #601) Don't use calendar.setfirstweekday; it is global state.
        -- .agent/preferences.md
        - (review of #607) Month reports use calendar months; only weekly figures use business weeks.
        -- .agent/past_fixes.md
        ## Overnight shifts counted twice
        Symptom: a shift across midnight appeared on two days. Fix: count an item once, in the bucket of its
        start.
        """),
    )


GENERATOR = Family(FAMILY, "multi-hop", "the weekday and time of day at which the business week starts, "
                   "decided in a time helper two calls below a weekly report", variants=(0, 1),
                   draw=fact_start, tell=tell, space=SPACE)
