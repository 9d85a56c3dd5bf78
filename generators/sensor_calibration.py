"""sensor-calibration (hard tier): the ADC reference voltage a temperature logger converts with.

The probe gives 500 mV at 0 C and 10 mV per degree; the board reads it with a 12-bit ADC whose
reference voltage turns counts into millivolts. Both variants share the bug the repro shows: the
refactor forgot to subtract the probe's 500 mV offset, so readings are 50 degrees too hot. What
the fix must also get right is the reference voltage, which only memory knows.

Variant 0 (`implicit`): the code converts with the nominal 3.3 V of the datasheet, the bug report
speaks of hot readings only, and nothing in the code points anywhere. One statement (a hardware
note, a review, a past fix, or in H the commit that calibrated the boards) says these boards
measure their reference lower; the hardware page and most notes repeat the nominal 3.3 V.

Variant 1 (`conflict`): the boards went from revision 2 to 3 (the code's `BOARD_REVISION` says 3).
Memory repeats revision 2's measured reference, the code still converts with it, and the most
recent note is about revision 2 boards in the field; one statement gives revision 3's reference.
"""

from __future__ import annotations

from decimal import Decimal

from sdebench.generation.facts import decimal_draw, decimal_spellings
from sdebench.generation.hard import HardStory, Step, hard_family, hard_prose, hard_versions

FAMILY = "sensor-calibration"
NOMINAL = Decimal("3.300")
REV_2 = Decimal("3.262")  # v1: revision 2's measured reference (decoy)
BENCH = Decimal("3.318")  # v0: the test rig's supply, the latest-dated value (decoy)
CONVENTIONAL = tuple(Decimal(x) for x in ("3.300", "3.250", "3.200", "3.350", "3.400", "3.280", "3.320"))
DECOYS = (REV_2, BENCH)
LO, HI = "3.201", "3.399"
# The variant's reference voltage: not a multiple of 5 mV, away from nominal and decoy values.
DRAW = decimal_draw(f"{FAMILY}-vref", LO, HI, "0.001", (*CONVENTIONAL, *DECOYS), "0.006", round_step="0.005",
                    gap="0.003")


def spell(variant: int, v: Decimal) -> tuple[str, ...]:
    """How memory spells a reference: `3.247`, `3,247`, `3.247 V`, `3247 mV`."""
    v = Decimal(v)
    return (*decimal_spellings(v, 3, units=("V",)), f"{int(v * 1000)} mV", f"{int(v * 1000)}mV")


def volts(v: Decimal) -> str:
    return f"{v:.3f} V"


def boards_module(revision: int) -> str:
    """The board description: which revision the logger ships on."""
    return f'''"""The logger board we ship."""

# The hardware revision of the boards in service; calibration values are per revision.
BOARD_REVISION = {revision}
SAMPLE_SECONDS = 30
'''


def probe(vref: Decimal, *, offset: bool, helper: bool, scale_note: bool = False) -> str:
    """The probe conversion module."""
    doc = '"""Convert raw ADC counts of the temperature probe to degrees."""'
    minus = " - PROBE_OFFSET_MV" if offset else ""
    text = f'''{doc}

FULL_SCALE = 4095{"  # 12-bit counts" if scale_note else ""}
VREF_VOLTS = {vref:.3f}
PROBE_OFFSET_MV = 500.0
MV_PER_DEGREE = 10.0


def millivolts(counts):
    """The voltage behind a raw reading, in millivolts."""
    if not 0 <= counts <= FULL_SCALE:
        raise ValueError(f"counts out of range: {{counts}}")
    return counts * VREF_VOLTS * 1000 / FULL_SCALE


def to_celsius(counts):
    """The temperature of a raw reading, in degrees Celsius (two decimals)."""
    return round((millivolts(counts){minus}) / MV_PER_DEGREE, 2)
'''
    if helper:
        text += '''

def to_fahrenheit(counts):
    """The temperature of a raw reading, in degrees Fahrenheit (two decimals)."""
    return round(to_celsius(counts) * 9 / 5 + 32, 2)
'''
    return text


def tests(pkg: str) -> tuple[str, str, str]:
    """The existing suite, the repro and the held-out tests."""
    base = f'''import pytest

from {pkg}.probe import millivolts, to_celsius, to_fahrenheit
from {pkg}.log import summary


def test_zero_counts_is_zero_volts():
    assert millivolts(0) == 0


def test_counts_out_of_range():
    with pytest.raises(ValueError):
        millivolts(5000)


def test_fahrenheit_follows_celsius():
    assert to_fahrenheit(1000) == round(to_celsius(1000) * 9 / 5 + 32, 2)


def test_summary_of_nothing():
    assert summary([]) == {{"count": 0}}
'''
    repro = f'''from {pkg}.probe import to_celsius


def test_room_temperature_reads_about_25():
    # Reported: a room at about 25 C reads close to 75 C.
    assert 20 < to_celsius(930) < 30
'''
    hidden = f'''from {pkg}.probe import to_celsius, to_fahrenheit
from {pkg}.log import summary


def test_hidden_celsius_sweep(observe):
    observe([to_celsius(c) for c in range(0, 4096, 37)])


def test_hidden_fahrenheit_sweep(observe):
    observe([to_fahrenheit(c) for c in range(5, 4096, 91)])


def test_hidden_summary(observe):
    observe(summary([620, 931, 1240, 4095]))
'''
    return base, repro, hidden


def log_module(pkg: str) -> str:
    """The logger's summary of a batch of readings."""
    return f'''"""Summaries of a batch of probe readings."""

from {pkg}.probe import to_celsius


def summary(counts):
    """Count, minimum, maximum and mean (Celsius) of raw readings."""
    if not counts:
        return {{"count": 0}}
    temps = [to_celsius(c) for c in counts]
    return {{"count": len(temps), "min": min(temps), "max": max(temps), "mean": round(sum(temps) / len(temps), 2)}}
'''


STATEMENT = ("The cold-room logger reports temperatures about 50 degrees too hot: a room at 25 C shows up as "
             "almost 75 C on the dashboard. tests/test_repro_probe.py reproduces it.")


def base_files(pkg: str, what: str) -> dict[str, str]:
    """The package's other files and the existing suite."""
    base, _, _ = tests(pkg)
    return {
        f"{pkg}/__init__.py": f'"""{pkg}: {what}."""\n',
        f"{pkg}/log.py": log_module(pkg),
        "tests/test_probe.py": base,
        "README.md": f"# {pkg}\n\n{what.capitalize()}.\n",
    }


def tell_v0(vref: Decimal, source: str) -> HardStory:
    """Variant 0: the nominal 3.3 V is everywhere; these boards measure lower (the fact)."""
    pkg = "thermolog"
    module = f"{pkg}/probe.py"
    _, repro, hidden = tests(pkg)
    calibrate = Step(
        message="calibration: name the full-scale count",
        files={module: probe(NOMINAL, offset=True, helper=False, scale_note=True)},
        h_message=f"calibration: the production batch's measured reference\n\nMeasured 2023-06-20: not the "
        f"nominal {volts(NOMINAL)}; the regulator drops and the reference settles at {volts(vref)}, so "
        f"{volts(NOMINAL)} stays in the datasheet only.",
        h_files={module: probe(vref, offset=True, helper=False, scale_note=True)},
    )
    return HardStory(
        package=pkg, module=module, before=[calibrate], competency="implicit",
        **hard_versions(lambda v, bug, later: probe(v, offset=not bug, helper=later), NOMINAL, vref),
        base_files=base_files(pkg, "logs the temperature of cold rooms"),
        repro_tests={"tests/test_repro_probe.py": repro}, hidden_tests={"tests/test_hidden_probe.py": hidden},
        statement=STATEMENT,
        tags=("embedded", "calibration"),
        **hard_prose(f"""
        -- fact
        The boards' ADC reference is {volts(vref)} (measured), not the datasheet's nominal value.
        -- conventional_guess
        subtract the 500 mV offset, converting with the nominal {volts(NOMINAL)}
        -- intro_msg_plain
        probe: convert raw counts to degrees Celsius (12-bit ADC, {volts(NOMINAL)} reference)
        -- refactor_msg
        probe: take the conversion constants from the datasheet; add to_fahrenheit()
        -- K docs/calibration.md
        Measured on the production batch (2023-06-20): the ADC reference is not the nominal {volts(NOMINAL)};
        it settles at {volts(vref)} because of the regulator's drop, and conversions that
        assume {volts(NOMINAL)} are off.
        -- F
        - (review of #248, 2023-06-22, hardware) Not the datasheet's {volts(NOMINAL)}: these boards' ADC
        reference measures {volts(vref)} (regulator drop); never convert with {volts(NOMINAL)}.
        -- X
        ## Freezer alarms fired late (2023-06-27)
        Symptom: alarms lagged the reference thermometer. Fix: the conversion assumed the
        nominal {volts(NOMINAL)}; our boards' ADC reference measures {volts(vref)} (regulator drop),
        so {volts(NOMINAL)} is gone from the conversion.
        -- docs/hardware.md
        # Hardware

        The temperature probe gives 500 mV at 0 C and 10 mV per degree. The logger board reads it with a
        12-bit ADC (0 to 4095 counts) and a {volts(NOMINAL)} reference.
        -- docs/hardware.md
        The board samples every 30 seconds and keeps the last 24 hours in flash.
        -- docs/calibration.md
        # Calibration

        Each board is checked against a reference thermometer in an ice bath and at room temperature before it
        ships.
        -- docs/adr/0003-sample-rate.md
        # ADR-0003: Sample every 10 seconds

        Status: Superseded

        The board sampled every 10 seconds. Superseded: 30 seconds saves flash and is enough for cold rooms.
        -- .agent/preferences.md
        - (review of #211, 2023-02-14) Convert with the datasheet's values ({volts(NOMINAL)} reference, 10 mV
        per degree); keep floats out of the stored readings.
        -- .agent/preferences.md
        - (review of #230) Round temperatures to two decimals only when displaying or storing.
        -- .agent/past_fixes.md
        ## Negative temperatures clipped (2023-05-09)
        Symptom: freezers never read below 0 C. Fix: the conversion subtracts the 500 mV offset after scaling
        counts by the {volts(NOMINAL)} reference, so readings below 500 mV go negative.
        -- .agent/past_fixes.md
        ## Test rig reports temperatures too hot (2024-07-01)
        Symptom: the test rig's logger showed a room about 2 degrees too hot on the dashboard. Fix: the rig's
        bench supply was set to {volts(BENCH)}; the boards in the cold rooms are not affected.
        """),
    )


def tell_v1(vref: Decimal, source: str) -> HardStory:
    """Variant 1: revision 2's reference is repeated; the code's revision 3 has its own (the fact)."""
    pkg = "coldchain"
    module = f"{pkg}/probe.py"
    _, repro, hidden = tests(pkg)
    boards = f"{pkg}/boards.py"
    rev_c = Step(
        message="boards: we ship revision 3",
        files={boards: boards_module(3)},
        h_message=f"boards: we ship revision 3\n\nMeasured 2023-09-18 on the first batch: revision 2's "
        f"{volts(REV_2)} does not carry over, revision 3's ADC reference measures {volts(vref)}; "
        f"{volts(REV_2)} stays with revision 2.",
    )
    return HardStory(
        package=pkg, module=module, before=[rev_c], competency="conflict", tags=("embedded", "calibration"),
        **hard_versions(lambda v, bug, later: probe(v, offset=not bug, helper=later), REV_2, vref),
        base_files={**base_files(pkg, "logs the temperature of refrigerated trucks"), boards: boards_module(2)},
        repro_tests={"tests/test_repro_probe.py": repro}, hidden_tests={"tests/test_hidden_probe.py": hidden},
        statement=STATEMENT.replace("cold-room logger", "truck logger"),
        **hard_prose(f"""
        -- fact
        Revision 3 boards (the ones shipped) have an ADC reference of {volts(vref)}.
        -- conventional_guess
        subtract the 500 mV offset, keeping revision 2's {volts(REV_2)}
        -- intro_msg_plain
        probe: convert raw counts to degrees Celsius (revision 2 boards, {volts(REV_2)} reference)
        -- refactor_msg
        probe: keep the calibration constants together; add to_fahrenheit()
        -- K docs/revisions.md
        Revision 3 (measured 2023-09-18): revision 2's {volts(REV_2)} does not carry over; the reference
        measures {volts(vref)}, and {volts(REV_2)} stays with revision 2 boards.
        -- F
        - (review of #402, 2023-09-20, hardware) Revision 2's {volts(REV_2)} is not revision 3's: on revision
        3 boards the reference measures {volts(vref)}; keep {volts(REV_2)} for revision 2 only.
        -- X
        ## New boards read off (2023-09-25)
        Symptom: the first revision 3 boards disagreed with the reference thermometer. Fix: they were
        converted with revision 2's {volts(REV_2)}; revision 3's reference measures {volts(vref)},
        and {volts(REV_2)} stays with revision 2.
        -- docs/hardware.md
        # Hardware

        The temperature probe gives 500 mV at 0 C and 10 mV per degree, read by a 12-bit ADC (0 to 4095
        counts). The reference voltage is measured per board revision.
        -- docs/hardware.md
        Revision 2 (2022-10-03): the reference measures {volts(REV_2)}; convert with that, never with the
        nominal 3.3 V.
        -- docs/revisions.md
        # Board revisions

        Revision 2 shipped from 2022-10. Revision 3 (from 2023-09) moved the regulator and the ADC; the code's
        BOARD_REVISION names the boards we ship.
        -- docs/adr/0003-sample-rate.md
        # ADR-0003: Sample every 10 seconds

        Status: Superseded

        The board sampled every 10 seconds. Superseded: 30 seconds saves flash and is enough for cold rooms.
        -- .agent/preferences.md
        - (review of #311, 2022-10-12) The reference is {volts(REV_2)}, measured; don't put the datasheet's
        nominal value back.
        -- .agent/preferences.md
        - (review of #330) Round temperatures to two decimals only when displaying or storing.
        -- .agent/past_fixes.md
        ## Freezer alarms fired late (2022-11-21)
        Symptom: alarms lagged the reference thermometer. Fix: convert with the
        measured {volts(REV_2)} instead of the nominal value.
        -- .agent/past_fixes.md
        ## Field units on the old boards (2024-10-03)
        Symptom: a customer's revision 2 units showed a step after an update. Fix: their calibration file
        keeps {volts(REV_2)}; revision 2 units stay on it until they are replaced.
        """),
    )


GENERATOR = hard_family(
    FAMILY, "the measured ADC reference voltage a temperature logger's boards convert readings with "
    "(millivolt precision), among nominal and other boards' values in memory",
    DRAW, (tell_v0, tell_v1), spell)
