"""night-shift-pay (hard tier): the supplement a payroll pays per night hour (22:00 to 06:00).

Variant 0 (`validity`): the supplement follows the collective agreement's dated table. An agreement
signed in June 2024 raised it retroactively from the first of April (the fact, with that effective
day); a later agreement announces a 2025 rate (the latest-dated statement), which no tested shift
reaches. Memory repeats the 2022 rate. Hidden tests pay night shifts on every day across the change.

Variant 1 (`conflict`): the staff handbook, the first commit and older notes give the draft
agreement's figure; one statement (an errata page, a payroll review, a past fix, or in H the commit
that applied it) corrects it to the signed agreement's. The most recent note quotes the draft figure
again, about a printed leaflet. The refactor also stops counting the 22:00 hour as a night hour,
which is the bug the repro shows.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sdebench.generation.facts import decimal_draw, decimal_spellings
from sdebench.generation.hard import HardStory, Step, dated_table, hard_family, hard_prose, hard_versions, iso
from sdebench.generation.parts import package_files

FAMILY = "night-shift-pay"
OLD = {0: Decimal("2.35"), 1: Decimal("2.80")}  # v0: the 2022 rate; v1: the draft agreement's figure (decoys)
ANNOUNCED = Decimal("3.10")  # v0: the 2025 agreement's rate, never reached by a tested shift (decoy)
CONVENTIONAL = tuple(Decimal(x) for x in ("2.35", "2.80", "3.10", "2.00", "2.50", "3.00", "1.50", "3.50", "4.00",
                                          "2.25", "2.75", "1.75"))
EFFECTIVE = date(2024, 4, 1)  # v0: the day the 2024 rate applies from (retroactively)
SIGNED = date(2024, 6, 10)  # v0: the day the 2024 agreement was signed
LO, HI = "1.51", "4.49"
# The variant's supplement per night hour: non-round, away from round and decoy rates.
DRAW = decimal_draw(f"{FAMILY}-supplement", LO, HI, "0.01", CONVENTIONAL, "0.11")


def spell(variant: int, p: Decimal) -> tuple[str, ...]:
    """How memory spells a supplement: `2.53`, `2,53`, `2.53 EUR`."""
    return decimal_spellings(Decimal(p), 2, units=("EUR",))


def eur(p: Decimal) -> str:
    return f"{p:.2f} EUR"


def hours_module(late: bool, helper: bool = False) -> str:
    """Counting night hours; `late` is the refactor's bug (the 22:00 hour is not a night hour), `helper`
    the refactor's own helper."""
    test = "hour > 22 or hour < 6" if late else "hour >= 22 or hour < 6"
    if helper:
        return f'''"""Which hours of a shift are night hours (22:00 to 06:00)."""


def is_night_hour(hour):
    """Whether the whole hour starting at `hour` (0-23) is a night hour."""
    return {test}


def night_hours(start_hour, hours):
    """How many of the `hours` whole hours starting at `start_hour` fall in the night."""
    if not 0 <= start_hour <= 23 or hours < 0:
        raise ValueError("a shift starts at a whole hour of the day and lasts a whole number of hours")
    return sum(1 for k in range(hours) if is_night_hour((start_hour + k) % 24))
'''
    return f'''"""Which hours of a shift are night hours (22:00 to 06:00)."""


def night_hours(start_hour, hours):
    """How many of the `hours` whole hours starting at `start_hour` fall in the night."""
    if not 0 <= start_hour <= 23 or hours < 0:
        raise ValueError("a shift starts at a whole hour of the day and lasts a whole number of hours")
    count = 0
    for k in range(hours):
        hour = (start_hour + k) % 24
        if {test}:
            count += 1
    return count
'''


# --- variant 0: a dated table, changed retroactively ----------------------------------------------


def pay_v0(pkg: str, rows: list[tuple[date, Decimal]], helper: bool, checked: bool = False) -> str:
    """The pay module with a dated supplement table."""
    lookup = dated_table("NIGHT_SUPPLEMENT", rows, "supplement_on", "day",
                         "The supplement per night hour for a shift on `day`.", "amount", "no agreement in force on",
                         checked=checked)
    text = f'''"""Pay for one shift: the wage plus the night supplement of the shift's day."""

from datetime import date
from decimal import Decimal

from {pkg}.hours import night_hours

# (in force from, supplement per night hour): a shift is paid by the last row not after its day.
{lookup}

def shift_pay(day, start_hour, hours, hourly_wage):
    """The pay for a shift: wage for every hour plus the supplement for every night hour."""
    return Decimal(hourly_wage) * hours + supplement_on(day) * night_hours(start_hour, hours)
'''
    if helper:
        text += '''

def payslip_line(day, start_hour, hours, hourly_wage):
    """The payslip's line for a shift."""
    return f"{day} {start_hour:02d}:00 +{hours}h  {shift_pay(day, start_hour, hours, hourly_wage)}"
'''
    return text


def tell_v0(p: Decimal, source: str) -> HardStory:
    """Variant 0: the 2024 rate applies from April, signed in June; a 2025 rate is announced."""
    pkg, old = "shiftpay", OLD[0]
    module = f"{pkg}/pay.py"
    first = date(2022, 1, 1)
    rows_old, rows_new = [(first, old)], [(first, old), (EFFECTIVE, p)]
    base_tests = f'''from datetime import date
from decimal import Decimal

import pytest

from {pkg}.hours import night_hours
from {pkg}.pay import payslip_line, shift_pay


def test_day_shift_has_no_night_hours():
    assert night_hours(8, 8) == 0


def test_night_shift_hours():
    assert night_hours(22, 8) == 8


def test_day_shift_pay_is_the_wage():
    assert shift_pay(date(2023, 3, 1), 8, 8, Decimal("15.00")) == Decimal("120.00")


def test_before_any_agreement():
    with pytest.raises(ValueError):
        shift_pay(date(2021, 6, 1), 22, 8, Decimal("15.00"))


def test_payslip_line_shows_the_pay():
    day = date(2023, 3, 1)
    assert payslip_line(day, 8, 8, Decimal("15.00")).endswith(str(shift_pay(day, 8, 8, Decimal("15.00"))))
'''
    repro = f'''from datetime import date
from decimal import Decimal

from {pkg}.pay import shift_pay


def test_july_2024_night_shift_is_paid_the_new_supplement():
    # Reported: a night shift on 2024-07-02 was paid exactly what the same shift paid on 2023-07-04.
    wage = Decimal("16.00")
    assert shift_pay(date(2024, 7, 2), 22, 8, wage) != shift_pay(date(2023, 7, 4), 22, 8, wage)
'''
    hidden = f'''from datetime import date, timedelta
from decimal import Decimal

from {pkg}.pay import shift_pay, supplement_on


def test_hidden_night_shifts_by_day(observe):
    start = date(2023, 10, 1)
    observe([shift_pay(start + timedelta(days=k), 22, 8, Decimal("16.00")) for k in range(0, 455, 2)])


def test_hidden_partial_nights(observe):
    observe([shift_pay(date(2024, 9, 3), h, 6, Decimal("14.50")) for h in range(24)])


def test_hidden_supplement_by_month(observe):
    observe([supplement_on(date(2024, m, 15)) for m in range(1, 13)])
'''
    row = Step(
        message="pay: check that shift days are dates",
        files={module: pay_v0(pkg, rows_old, False, checked=True)},
        h_message=f"pay: the 2024 agreement\n\nSigned {iso(SIGNED)}, for shifts from {iso(EFFECTIVE)} on "
        f"(retroactive): {eur(old)} becomes {eur(p)} per night hour; earlier shifts keep {eur(old)}. Shift days "
        "are checked to be dates.",
        h_files={module: pay_v0(pkg, rows_new, False, checked=True)},
    )
    return HardStory(
        package=pkg, module=module, before=[row], competency="validity", tags=("payroll", "money", "dates"),
        **hard_versions(lambda rows, bug, later: pay_v0(pkg, rows, later), rows_old, rows_new,
                        [(first, old), (date(2024, 7, 1), Decimal("3.00"))]),
        base_files=package_files(pkg, f"{pkg}: pays shifts, with night supplements.",
                                 f"# {pkg}\n\nPays shifts: wage plus the night supplement of the shift's day.\n",
                                 {f"{pkg}/hours.py": hours_module(False), "tests/test_pay.py": base_tests}),
        repro_tests={"tests/test_repro_pay.py": repro}, hidden_tests={"tests/test_hidden_pay.py": hidden},
        **hard_prose(f"""
        -- statement
        Night shifts worked this summer are still paid the old night supplement on the payslips.
        tests/test_repro_pay.py reproduces it.
        -- fact
        Night hours of shifts from {iso(EFFECTIVE)} on earn {eur(p)} each (the 2024 agreement,
        signed {iso(SIGNED)}, retroactive); earlier shifts keep the 2022 rate.
        -- conventional_guess
        a new row of 3.00 EUR from 2024-07-01
        -- intro_msg_plain
        pay: the 2022 agreement, {eur(old)} per night hour
        -- refactor_msg
        pay: one loop over the agreements; add payslip_line()
        -- K docs/adr/0004-agreement-table.md
        Row added {iso(SIGNED)} for shifts from {iso(EFFECTIVE)} on (retroactively): the 2024 agreement,
        signed that day, replaces {eur(old)} with {eur(p)} per night hour; earlier shifts keep {eur(old)}.
        -- F
        - (review of #833, {iso(SIGNED)}, payroll) For shifts from {iso(EFFECTIVE)} on, retroactively, the
        signed 2024 agreement replaces {eur(old)} with {eur(p)} per night hour; earlier shifts
        keep {eur(old)}.
        -- X
        ## Back pay for spring night shifts ({iso(SIGNED)})
        Symptom: the agreement signed today is retroactive. Fix: for shifts
        from {iso(EFFECTIVE)} on, {eur(old)} becomes {eur(p)} per night hour; earlier shifts keep {eur(old)}.
        -- docs/payroll.md
        # Night work

        Every hour worked between 22:00 and 06:00 earns a night supplement on top of the wage: {eur(old)} per
        night hour under the 2022 agreement. A shift is paid by the agreement in force on the day it starts.
        -- docs/payroll.md
        Announced on 2024-11-05: the 2025 agreement pays night shifts from 2025-01-01 on a night supplement
        of {eur(ANNOUNCED)} per night hour.
        -- docs/adr/0003-monthly-supplement.md
        # ADR-0003: A monthly night allowance

        Status: Superseded

        Night work earned a flat monthly allowance. Superseded: the supplement is paid per night hour.
        -- docs/adr/0004-agreement-table.md
        # ADR-0004: One dated supplement table

        Status: Accepted

        Supplements are rows (in force from, amount) in the pay module; a new agreement adds a row, so past
        payslips can be recomputed.
        -- .agent/preferences.md
        - (review of #801, {iso(first)}) The night supplement is {eur(old)} per night hour; a shift is paid by
        the agreement of the day it starts.
        -- .agent/preferences.md
        - (review of #815) Money is Decimal end to end; never build a Decimal from a float.
        -- .agent/past_fixes.md
        ## Shifts across midnight split in two (2023-02-20)
        Symptom: a 22:00 shift was paid as two shifts. Fix: a shift is paid on its start day,
        at {eur(old)} per night hour then.
        -- .agent/past_fixes.md
        ## Payslips printed with the wrong date (2024-08-12)
        Symptom: payslips showed the payday instead of the shift's day. Fix: the line prints the shift's start
        day.
        """),
    )


# --- variant 1: a figure corrected once -----------------------------------------------------------


def pay_v1(pkg: str, supplement: Decimal, helper: bool, noted: bool = False) -> str:
    """The pay module with one supplement."""
    note = "# Per night hour, on top of the wage.\n" if noted else ""
    text = f'''"""Pay for one shift: the wage plus the night supplement."""

from decimal import Decimal

from {pkg}.hours import night_hours

{note}NIGHT_SUPPLEMENT = Decimal("{supplement:.2f}")


def shift_pay(start_hour, hours, hourly_wage):
    """The pay for a shift: wage for every hour plus the supplement for every night hour."""
    return Decimal(hourly_wage) * hours + NIGHT_SUPPLEMENT * night_hours(start_hour, hours)
'''
    if helper:
        text += '''

def payslip_line(start_hour, hours, hourly_wage):
    """The payslip's line for a shift."""
    return f"{start_hour:02d}:00 +{hours}h  {shift_pay(start_hour, hours, hourly_wage)}"
'''
    return text


def tell_v1(p: Decimal, source: str) -> HardStory:
    """Variant 1: the handbook's draft figure is repeated; one correction gives the signed one."""
    pkg, old = "rosterwage", OLD[1]
    module = f"{pkg}/pay.py"
    hours = f"{pkg}/hours.py"
    base_tests = f'''from decimal import Decimal

from {pkg}.hours import night_hours
from {pkg}.pay import payslip_line, shift_pay


def test_day_shift_has_no_night_hours():
    assert night_hours(8, 8) == 0


def test_early_morning_is_night():
    assert night_hours(4, 2) == 2


def test_day_shift_pay_is_the_wage():
    assert shift_pay(8, 8, Decimal("15.00")) == Decimal("120.00")


def test_payslip_line_shows_the_pay():
    assert payslip_line(8, 8, Decimal("15.00")).endswith("120.00")
'''
    repro = f'''from decimal import Decimal

from {pkg}.hours import night_hours
from {pkg}.pay import shift_pay


def test_the_22_oclock_hour_is_a_night_hour():
    # Reported: a shift from 22:00 to 23:00 was paid as a day hour.
    assert night_hours(22, 1) == 1
    assert shift_pay(22, 1, Decimal("15.00")) > Decimal("15.00")
'''
    hidden = f'''from decimal import Decimal

from {pkg}.pay import shift_pay


def test_hidden_every_start_hour(observe):
    observe([shift_pay(h, n, Decimal(1450) / 100) for h in range(24) for n in (1, 4, 8, 12)])


def test_hidden_long_night_shifts(observe):
    observe([shift_pay(22, n, Decimal(2135) / 100) for n in range(0, 48, 3)])
'''
    signed = Step(
        message="pay: say what the supplement is per",
        files={module: pay_v1(pkg, old, False, noted=True)},
        h_message=f"pay: the signed agreement's supplement\n\nThe handbook printed the draft agreement's "
        f"{eur(old)}; the signed agreement pays {eur(p)} per night hour, not {eur(old)}.",
        h_files={module: pay_v1(pkg, p, False, noted=True)},
    )
    return HardStory(
        package=pkg, module=hours, competency="conflict", tags=("payroll", "money"),
        **hard_versions(lambda _, bug, later: hours_module(bug, helper=later), None, None),
        base_files=package_files(pkg, f"{pkg}: pays shifts, with night supplements.",
                                 f"# {pkg}\n\nPays shifts: wage plus the night supplement.\n",
                                 {"tests/test_pay.py": base_tests}),
        repro_tests={"tests/test_repro_pay.py": repro}, hidden_tests={"tests/test_hidden_pay.py": hidden},
        before=[Step(message=f"pay: {eur(old)} per night hour, as in the handbook", files={module: pay_v1(pkg, old, False)}),
                signed],
        after=[Step(message="pay: add payslip_line()", files={module: pay_v1(pkg, old, True, noted=True)},
                    h_files={module: pay_v1(pkg, old, True, noted=True)},
                    h_message="pay: add payslip_line(); take the supplement from the handbook again")],
        # The fix touches two modules: the hours (the repro's bug) and the supplement (the fact).
        extra_oracle={f"{pkg}/pay.py": pay_v1(pkg, p, True, noted=True)},
        **hard_prose(f"""
        -- statement
        A shift from 22:00 to 23:00 is paid as a day hour: the first night hour of a shift earns no night
        supplement. tests/test_repro_pay.py reproduces it.
        -- fact
        The night supplement is {eur(p)} per night hour (the signed agreement; the handbook had the draft's).
        -- conventional_guess
        count 22:00 as a night hour, keeping the handbook's {eur(old)}
        -- intro_msg_plain
        hours: count the night hours of a shift
        -- refactor_msg
        hours: name the night-hour test (is_night_hour)
        -- K docs/errata.md
        2023-05-02: the handbook's {eur(old)} per night hour is the draft agreement's; the signed agreement
        pays {eur(p)}, so {eur(old)} is wrong wherever it is printed.
        -- F
        - (review of #933, 2023-05-03, payroll) The handbook's {eur(old)} comes from the draft agreement; the
        signed one pays {eur(p)} per night hour, not {eur(old)}.
        -- X
        ## Night pay below the agreement (2023-05-08)
        Symptom: the union's audit found night hours underpaid. Fix: the handbook's {eur(old)} was the
        draft's; the signed agreement pays {eur(p)} per night hour, not {eur(old)}.
        -- docs/handbook.md
        # Staff handbook: night work

        Every hour worked between 22:00 and 06:00 earns a night supplement of {eur(old)} on top of the wage. A
        shift from 22:00 counts that first hour as a night hour.
        -- docs/errata.md
        # Handbook errata

        Corrections to the staff handbook, newest last; the handbook itself is reprinted once a year.
        -- docs/adr/0003-monthly-supplement.md
        # ADR-0003: A monthly night allowance

        Status: Superseded

        Night work earned a flat monthly allowance. Superseded: the supplement is paid per night hour.
        -- .agent/preferences.md
        - (review of #901, 2023-02-06) The night supplement is {eur(old)} per night hour, as in the handbook.
        -- .agent/preferences.md
        - (review of #915) Money is Decimal end to end; never build a Decimal from a float.
        -- .agent/past_fixes.md
        ## Early-morning hours paid as day hours (2023-03-14)
        Symptom: 04:00 to 06:00 earned no supplement. Fix: hours before 06:00 are night hours and
        earn {eur(old)} each.
        -- .agent/past_fixes.md
        ## Leaflet reprint (2024-09-30)
        Symptom: the works council asked whether the printed leaflet's {eur(old)} per night hour must be
        reprinted before the audit. Fix: no code change; the leaflet is theirs.
        """),
    )


GENERATOR = hard_family(
    FAMILY, "the supplement a payroll pays per night hour: by the agreement in force on a shift's day (v0) "
    "or the signed agreement's figure among a draft's (v1)",
    DRAW, (tell_v0, tell_v1), spell)
