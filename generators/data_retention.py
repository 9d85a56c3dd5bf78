"""data-retention (hard tier): how many days customer records are kept before the purge deletes them.

Variant 0 (`scope`): the retention page, the first commit and every note say records are kept
365 days, and the latest note re-confirms it. Records of EU customers are kept for their own period,
stated once, apart from the retention page (the regions page, a review from legal, a past fix, or in
H the commit that added it). The refactor also purges a day late, which is the bug the repro shows.
Hidden tests purge records of every region.

Variant 1 (`validity`): the period depends on when a record was created: records created before the
2024 policy keep the old two years; records created from its first day get the new period (the
fact). A 2025 policy is announced (the latest-dated statement) that no tested record reaches. The
code lacks the 2024 row; hidden tests sweep creation days across the change.
"""

from __future__ import annotations

from datetime import date

from sdebench.generation.facts import integer_draw
from sdebench.generation.hard import HardStory, Step, dated_table, hard_family, hard_prose, hard_versions, iso
from sdebench.generation.parts import package_files

FAMILY = "data-retention"
HEADLINE = 365  # v0: days kept in every region but one (decoy)
OLD = 730  # v1: the period before the 2024 policy (decoy)
ANNOUNCED = 540  # v1: the 2025 policy, never reached by a tested record (decoy)
CONVENTIONAL = (365, 730, 540, 180, 366, 400, 450, 500, 600, 90, 1095, 395, 425, 455, 485, 545, 640)
SWITCH = date(2024, 2, 1)  # v1: the first creation day under the 2024 policy
LO, HI = 201, 699


def drawable(n: int) -> bool:
    """A period the draw may return: not a multiple of 5 or 7, away from usual and decoy periods."""
    return n % 5 != 0 and n % 7 != 0 and all(abs(n - c) > 3 for c in CONVENTIONAL)


# v0: the EU period; v1: the 2024 policy's period.
DRAW = integer_draw(f"{FAMILY}-days", LO, HI, CONVENTIONAL, drawable)


def spell(variant: int, n: int) -> tuple[str, ...]:
    """How memory spells a period: `437 days`, `437-day`, `437 d`."""
    return (f"{n} days", f"{n}-day", f"{n} d", f"{n}d", f"{n} calendar days")


def days(n: int) -> str:
    return f"{n} days"


# --- variant 0: one region's own period ------------------------------------------------------------


def retention_v0(period: int, *, late: bool, helper: bool, eu: int | None = None, checked: bool = False) -> str:
    """The retention module of variant 0; `late` is the bug (purged a day after the period ends)."""
    compare = ">" if late else ">="
    eu_const = f"EU_RETENTION_DAYS = {eu}\n" if eu is not None else ""
    eu_branch = '    if region == "eu":\n        return EU_RETENTION_DAYS\n' if eu is not None else ""
    msg = " (us, eu or apac)" if checked else ""
    text = f'''"""How long customer records are kept before the purge job deletes them."""

from datetime import timedelta

REGIONS = ("us", "eu", "apac")
RETENTION_DAYS = {period}
{eu_const}

def retention_days(region):
    """Days a record of a customer in `region` is kept after its creation."""
    if region not in REGIONS:
        raise ValueError(f"unknown region {{region!r}}{msg}")
{eu_branch}    return RETENTION_DAYS


def purge_date(created, region):
    """The first day the record may be deleted."""
    return created + timedelta(days=retention_days(region))


def is_expired(created, today, region):
    """Whether the purge job deletes a record created on `created` when it runs on `today`."""
    return today {compare} purge_date(created, region)
'''
    if helper:
        text += '''

def expired(records, today):
    """The ids of the (id, created, region) records the purge deletes on `today`."""
    return [rid for rid, created, region in records if is_expired(created, today, region)]
'''
    return text


def tell_v0(n: int, source: str) -> HardStory:
    """Variant 0: 365 days everywhere, except EU customers (the fact), stated apart."""
    pkg = "purgejob"
    module = f"{pkg}/retention.py"
    base_tests = f'''from datetime import date

import pytest

from {pkg}.retention import expired, is_expired, purge_date


def test_fresh_record_is_kept():
    assert not is_expired(date(2024, 3, 1), date(2024, 3, 2), "us")


def test_unknown_region():
    with pytest.raises(ValueError):
        purge_date(date(2024, 3, 1), "mars")


def test_purge_lists_ids():
    records = [("a", date(2020, 1, 1), "us"), ("b", date(2024, 3, 1), "us")]
    assert expired(records, date(2024, 3, 2)) == ["a"]
'''
    repro = f'''from datetime import date

from {pkg}.retention import is_expired, purge_date


def test_record_is_purged_on_its_purge_date():
    # Reported: records survive one day past their retention period.
    created = date(2023, 1, 10)
    assert is_expired(created, purge_date(created, "us"), "us")
'''
    hidden = f'''from datetime import date, timedelta

from {pkg}.retention import REGIONS, expired, is_expired, purge_date


# Every day is an offset from one early day, so no date the tests spell out can be an answer.
BASE = date(2020, 1, 1)


def test_hidden_expiry_by_age(observe):
    created = BASE + timedelta(days=1096)
    observe({{r: [is_expired(created, created + timedelta(days=k), r) for k in range(0, 800, 3)] for r in REGIONS}})


def test_hidden_purge_dates(observe):
    observe([purge_date(BASE + timedelta(days=851 + d), r) for r in REGIONS for d in range(0, 900, 97)])


def test_hidden_purge_run(observe):
    records = [(f"r{{k}}", BASE + timedelta(days=731 + 11 * k), r) for k in range(90) for r in REGIONS]
    observe(expired(records, BASE + timedelta(days=1642)))
'''
    eu_step = Step(
        message="retention: name the regions in the error",
        files={module: retention_v0(HEADLINE, late=False, helper=False, checked=True)},
        h_message=f"retention: EU records' own period\n\nLegal's ruling of 2023-05-22: EU records are not on the "
        f"general {days(HEADLINE)}; they are kept {days(n)}, while the other regions keep {days(HEADLINE)}. "
        "The error names the regions.",
        h_files={module: retention_v0(HEADLINE, late=False, helper=False, checked=True, eu=n)},
    )
    return HardStory(
        package=pkg, module=module, before=[eu_step], competency="scope", tags=("privacy", "dates"),
        **hard_versions(lambda eu, bug, later: retention_v0(HEADLINE, late=bug, helper=later, eu=eu), None, n),
        base_files=package_files(pkg, f"{pkg}: deletes customer records after their retention period.",
                                 f"# {pkg}\n\nThe nightly purge of customer records past their retention period.\n",
                                 {"tests/test_retention.py": base_tests}),
        repro_tests={"tests/test_repro_purge.py": repro}, hidden_tests={"tests/test_hidden_purge.py": hidden},
        **hard_prose(f"""
        -- statement
        The nightly purge keeps customer records one day past their retention period: a record is still there
        on its purge date. tests/test_repro_purge.py reproduces it.
        -- fact
        EU customers' records are kept {days(n)}; the other regions keep the general period.
        -- conventional_guess
        purge on the purge date, {days(HEADLINE)} in every region
        -- intro_msg_plain
        retention: keep records {days(HEADLINE)}
        -- refactor_msg
        retention: one period for every region; add expired() for the purge run
        -- K docs/regions.md
        Legal's ruling of 2023-05-22: EU records are not on the general {days(HEADLINE)}; they are
        kept {days(n)} after creation, while us and apac keep {days(HEADLINE)}.
        -- F
        - (review of #1342, 2023-05-24, legal) EU customers' records are not on the general {days(HEADLINE)}:
        they are kept {days(n)}; us and apac keep {days(HEADLINE)}.
        -- X
        ## EU records purged too early (2023-06-05)
        Symptom: a regulator's request found EU records already deleted. Fix: not the
        general {days(HEADLINE)}: EU records are kept {days(n)}, per legal's ruling; the other regions
        keep {days(HEADLINE)}.
        -- docs/retention.md
        # Data retention

        Customer records are kept {days(HEADLINE)} after they were created; the nightly purge job deletes a
        record on its purge date, never later.
        -- docs/retention.md
        Backups follow the same period; restored records are purged again by the next run.
        -- docs/regions.md
        # Regions

        Customers are served from three regions: us, eu and apac. A record stays in the region of the customer
        who created it.
        -- docs/adr/0003-soft-delete.md
        # ADR-0003: Soft delete

        Status: Superseded

        Expired records were flagged, not deleted. Superseded: the purge deletes them.
        -- .agent/preferences.md
        - (review of #1301, 2023-01-16) Records are kept {days(HEADLINE)}; the purge must delete on the purge
        date itself.
        -- .agent/preferences.md
        - (review of #1388, 2024-09-23, compliance) The yearly audit confirmed {days(HEADLINE)} as our
        retention period; don't change it in refactors.
        -- .agent/past_fixes.md
        ## Purge skipped leap days (2024-03-04)
        Symptom: records created on 2020-02-29 were never purged. Fix: the purge date is creation
        plus {days(HEADLINE)} as a timedelta, not a calendar year.
        -- .agent/past_fixes.md
        ## Purge ran twice (2023-08-08)
        Symptom: the job deleted nothing on its second run and alerted. Fix: an empty run is fine; the alert
        only fires on errors.
        """),
    )


# --- variant 1: a period by creation day ------------------------------------------------------------


def retention_v1(rows: list[tuple[date, int]], helper: bool, checked: bool = False) -> str:
    """The retention module of variant 1: policies by creation day."""
    lookup = dated_table("POLICIES", rows, "retention_days", "created", "Days a record created on `created` is kept.",
                         "kept", "no policy for records created on", checked=checked)
    text = f'''"""How long customer records are kept: the policy in force on the day a record was created."""

from datetime import date, timedelta

# (records created from, days kept): a record keeps the last policy not after its creation day.
{lookup}

def purge_date(created):
    """The first day the record may be deleted."""
    return created + timedelta(days=retention_days(created))
'''
    if helper:
        text += '''

def expired(records, today):
    """The ids of the (id, created) records the purge deletes on `today`."""
    return [rid for rid, created in records if today >= purge_date(created)]
'''
    return text


def tell_v1(n: int, source: str) -> HardStory:
    """Variant 1: records created from the 2024 policy's first day keep the new period (the fact)."""
    pkg = "recordkeeper"
    module = f"{pkg}/retention.py"
    first = date(2021, 1, 1)
    rows_old, rows_new = [(first, OLD)], [(first, OLD), (SWITCH, n)]
    base_tests = f'''from datetime import date

import pytest

from {pkg}.retention import expired, purge_date, retention_days


def test_2022_record():
    assert retention_days(date(2022, 6, 1)) == 730


def test_before_any_policy():
    with pytest.raises(ValueError):
        purge_date(date(2020, 6, 1))


def test_purge_lists_ids():
    assert expired([("a", date(2021, 3, 1)), ("b", date(2023, 3, 1))], date(2024, 1, 1)) == ["a"]
'''
    repro = f'''from datetime import date, timedelta

from {pkg}.retention import purge_date


def test_spring_2024_record_follows_the_new_policy():
    # Reported: a record created on 2024-05-02 is scheduled for deletion two years later.
    assert purge_date(date(2024, 5, 2)) != date(2024, 5, 2) + timedelta(days=730)
'''
    hidden = f'''from datetime import date, timedelta

from {pkg}.retention import expired, purge_date, retention_days


# Every day is an offset from one early day, so no date the tests spell out can be an answer.
BASE = date(2020, 1, 1)


def test_hidden_days_kept_by_creation_day(observe):
    start = BASE + timedelta(days=1339)
    observe([retention_days(start + timedelta(days=k)) for k in range(0, 640, 3)])


def test_hidden_purge_dates(observe):
    observe([purge_date(BASE + timedelta(days=1404 + k)) for k in range(0, 500, 23)])


def test_hidden_purge_run(observe):
    records = [(f"r{{k}}", BASE + timedelta(days=731 + 9 * k)) for k in range(135)]
    observe(expired(records, BASE + timedelta(days=1978)))
'''
    row = Step(
        message="retention: check that creation days are dates",
        files={module: retention_v1(rows_old, False, checked=True)},
        h_message=f"retention: the 2024 policy row\n\nFor records created from {iso(SWITCH)} on, {days(OLD)} "
        f"becomes {days(n)}; older records keep {days(OLD)}. Creation days are checked to be dates.",
        h_files={module: retention_v1(rows_new, False, checked=True)},
    )
    return HardStory(
        package=pkg, module=module, before=[row], competency="validity", tags=("privacy", "dates"),
        **hard_versions(lambda rows, bug, later: retention_v1(rows, later), rows_old, rows_new,
                        [(first, OLD), (date(2024, 1, 1), HEADLINE)]),
        base_files=package_files(pkg, f"{pkg}: deletes customer records after their retention period.",
                                 f"# {pkg}\n\nThe nightly purge of customer records past their retention period.\n",
                                 {"tests/test_retention.py": base_tests}),
        repro_tests={"tests/test_repro_purge.py": repro}, hidden_tests={"tests/test_hidden_purge.py": hidden},
        **hard_prose(f"""
        -- statement
        Customer records created since the policy change early this year are still scheduled for deletion two
        years after creation. tests/test_repro_purge.py reproduces it.
        -- fact
        Records created from {iso(SWITCH)} on are kept {days(n)}; older ones keep their two years.
        -- conventional_guess
        a new policy row of {days(HEADLINE)} from 2024-01-01
        -- intro_msg_plain
        retention: keep records {days(OLD)}
        -- refactor_msg
        retention: one loop over the policies; add expired() for the purge run
        -- K docs/adr/0004-policy-table.md
        Row added 2024-01-15 for records created from {iso(SWITCH)} on: instead of {days(OLD)} they are
        kept {days(n)} (the 2024 policy); older records keep {days(OLD)}.
        -- F
        - (review of #1433, legal) For records created from {iso(SWITCH)} on, the 2024 policy
        replaces {days(OLD)} with {days(n)}; older records keep {days(OLD)}.
        -- X
        ## New records on the old period ({iso(SWITCH)})
        Symptom: records created from this day on were still given the old period. Fix: for records created
        from this day, {days(OLD)} becomes {days(n)} (the 2024 policy); older records keep {days(OLD)}.
        -- docs/retention.md
        # Data retention

        Since {iso(first)} customer records are kept {days(OLD)} (two years) after creation; the nightly purge
        deletes a record on its purge date.
        -- docs/retention.md
        A record keeps the policy in force on the day it was created, whatever changes later: new policies
        apply to new records.
        -- docs/retention.md
        Announced on 2024-12-02: records created from 2025-07-01 on are scheduled for
        deletion {days(ANNOUNCED)} after creation.
        -- docs/adr/0003-soft-delete.md
        # ADR-0003: Soft delete

        Status: Superseded

        Expired records were flagged, not deleted. Superseded: the purge deletes them.
        -- docs/adr/0004-policy-table.md
        # ADR-0004: Retention policies as dated rows

        Status: Accepted

        Policies are rows (records created from, days kept) in the retention module; a new policy adds a row
        and never changes the purge date of existing records.
        -- .agent/preferences.md
        - (review of #1401, {iso(first)}) Records are kept {days(OLD)}; don't shorten it for records that
        already exist.
        -- .agent/preferences.md
        - (review of #1415) Dates are dates: never compare a record's creation as a string.
        -- .agent/past_fixes.md
        ## Purge skipped leap days (2022-03-07)
        Symptom: records created on 2020-02-29 were never purged. Fix: the purge date is creation
        plus {days(OLD)} as a timedelta.
        -- .agent/past_fixes.md
        ## Purge report mislabelled (2024-10-14)
        Symptom: the weekly report named the wrong policy for some records. Fix: the report reads the policy
        of each record's creation day.
        """),
    )


GENERATOR = hard_family(
    FAMILY, "how many days customer records are kept: one region's own period stated apart (v0) or the "
    "period of the policy in force on a record's creation day (v1)",
    DRAW, (tell_v0, tell_v1), spell)
