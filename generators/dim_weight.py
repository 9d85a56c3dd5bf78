"""dim-weight: parcels are billed on volumetric weight with the carrier's house divisor.

Single-value fact: the divisor turning cubic centimetres into volumetric kilograms (a contract
value between 6401 and 6699, never a multiple of 10). HEAD divides by
1000, so bulky parcels are billed several times their weight; the repro only bounds the billed
weight of one box, which the usual 5000 also satisfies. Hidden tests bill a fixed sweep of boxes
(the same whatever the divisor) and read the volumetric weight of one, which pins the divisor.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sdebench.generation.facts import draw_integer, integer_space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "dim-weight"
HEAD_DIVISOR = 1000
CONV_DIVISORS = (4000, 5000, 6000, 7000)
CONV_DIVISOR = 5000


@dataclass(frozen=True)
class Shape:
    """What differs between variants: the domain and names."""

    project: str
    package: str
    module: str
    carrier: str
    price_per_kg: str


SHAPES = {
    0: Shape("parcelquote", "parcelquote", "weights", "the express carrier", "4.20"),
    1: Shape("courierkit", "courierkit", "dims", "our courier partner", "3.10"),
}


DRAW = (6401, 6699)  # the contract band: far (> 150) from the usual divisors


def drawable(d: int) -> bool:
    """Whether the draw may return divisor `d`: no multiple of 10, far from the usual divisors."""
    return bool(d % 10) and all(abs(d - c) > 150 for c in CONV_DIVISORS)


def fact_of(variant: int) -> int:
    """The volumetric divisor of a variant."""
    return draw_integer(f"{FAMILY}-divisor-{variant}", *DRAW, drawable)


# Rule 7: the usual divisors (and HEAD's), then every integer of the draw's band and ten either side
# (the hidden tests read an exact volumetric weight, so every divisor behaves differently).
SPACE = integer_space((5000, 6000, 4000, 7000, 2500, 3000, 3500, 4500, 5500, 6500, 8000, 10000, HEAD_DIVISOR),
                      *DRAW, drawable, margin=10)


def sweep_boxes(variant: int, count: int = 12) -> list[tuple[int, int, int]]:
    """The boxes (cm) the hidden tests bill: drawn per variant, never from the divisor."""
    rng = random.Random(f"{FAMILY}-sweep-{variant}")
    return [(rng.randint(20, 80), rng.randint(15, 60), rng.randint(10, 50)) for _ in range(count)]


def rule_module(s: Shape, divisor: int, quote: bool) -> str:
    """The weights module; `quote` adds the refactor's quote()."""
    text = f'''"""Billable weight of a parcel: the larger of its actual and its volumetric weight."""

import math

VOLUMETRIC_DIVISOR = {divisor}  # cubic centimetres per volumetric kilogram
STEP_KG = 0.5  # billed weight rounds up to the next step


def volumetric_kg(length_cm: float, width_cm: float, height_cm: float) -> float:
    """The volumetric weight of a box, in kilograms."""
    return length_cm * width_cm * height_cm / VOLUMETRIC_DIVISOR


def billable_kg(actual_kg: float, length_cm: float, width_cm: float, height_cm: float) -> float:
    """The weight the carrier bills: the larger weight, rounded up to the next step."""
    heavier = max(actual_kg, volumetric_kg(length_cm, width_cm, height_cm))
    return math.ceil(heavier / STEP_KG) * STEP_KG
'''
    if quote:
        text += f'''

PRICE_PER_KG = {s.price_per_kg}


def quote(actual_kg: float, length_cm: float, width_cm: float, height_cm: float) -> float:
    """The shipping price of one parcel, rounded to cents."""
    return round(billable_kg(actual_kg, length_cm, width_cm, height_cm) * PRICE_PER_KG, 2)
'''
    return text


def parcel_module(s: Shape) -> str:
    """The parcel record (unchanged by the bug)."""
    return f'''"""A parcel as the shop hands it to {s.carrier}."""

from dataclasses import dataclass

from {s.package}.{s.module} import billable_kg


@dataclass(frozen=True)
class Parcel:
    """Dimensions in centimetres, weight in kilograms."""

    length_cm: float
    width_cm: float
    height_cm: float
    weight_kg: float

    def __post_init__(self):
        if min(self.length_cm, self.width_cm, self.height_cm, self.weight_kg) <= 0:
            raise ValueError(f"parcel dimensions and weight must be positive: {{self}}")

    def billed_kg(self) -> float:
        """The weight the carrier bills for this parcel."""
        return billable_kg(self.weight_kg, self.length_cm, self.width_cm, self.height_cm)
'''


def tokens(divisor: int) -> tuple[str, ...]:
    """Every spelling that would reveal the divisor."""
    d = str(divisor)
    return (d, f"{divisor:,}", f"{d[0]} {d[1:]}", f"{d[0]}.{d[1:]}", f"{d[0]}'{d[1:]}", f"{d[0]}_{d[1:]}")


def billable(actual: float, volume: int, divisor: int) -> float:
    """Billed kilograms: the larger of actual and volumetric weight, up to the next half kilogram."""
    return math.ceil(max(actual, volume / divisor) * 2) / 2


def tell(variant: int, divisor: int) -> Story:
    """The story of one variant whose volumetric divisor is `divisor`."""
    s = SHAPES[variant]
    pkg = s.package
    boxes = sweep_boxes(variant)
    base_tests = f'''import pytest

from {pkg}.parcel import Parcel


def test_small_heavy_parcel_bills_actual_weight():
    assert Parcel(10, 10, 10, 3.2).billed_kg() == 3.5


def test_weight_rounds_up_to_half_kilo():
    assert Parcel(5, 5, 5, 1.01).billed_kg() == 1.5


def test_dimensions_must_be_positive():
    with pytest.raises(ValueError):
        Parcel(0, 10, 10, 1)
'''
    repro = f'''from {pkg}.parcel import Parcel
from {pkg}.{s.module} import billable_kg


def test_bulky_light_box_is_not_overbilled():
    # Reported: a 50 x 40 x 30 cm box weighing 2 kg was billed as 60 kg.
    assert billable_kg(2, 50, 40, 30) < 20


def test_parcel_uses_the_same_rule():
    assert Parcel(50, 40, 30, 2).billed_kg() < 20
'''
    # Expected values only on the right of each assert: they are dropped from the held-out
    # observation tests and recorded from the oracle instead.
    billed = [billable(0.3, a * b * c, divisor) for a, b, c in boxes]
    a0, b0, c0 = boxes[0]
    first = billed[0]
    hidden = f'''import pytest

from {pkg}.parcel import Parcel
from {pkg}.{s.module} import billable_kg, quote, volumetric_kg


def test_hidden_billed_weight():
    assert [billable_kg(0.3, *box) for box in {boxes!r}] == {billed!r}


def test_hidden_volumetric_weight():
    assert volumetric_kg(50, 40, 30) == pytest.approx({60000 / divisor!r})


def test_hidden_parcel_and_quote_agree():
    assert Parcel({a0}, {b0}, {c0}, 0.3).billed_kg() == {first!r}
    assert quote(0.3, {a0}, {b0}, {c0}) == {round(first * float(s.price_per_kg), 2)!r}
'''
    return Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        **rule_versions(lambda d, later: rule_module(s, d, quote=later), divisor, HEAD_DIVISOR, CONV_DIVISOR),
        base_files=package_files(pkg, f"{s.project}: parcel weights and shipping quotes.",
                                 f"# {s.project}\n\nQuotes "
                                 f"parcels for {s.carrier}.\n",
                                 {f"{pkg}/parcel.py": parcel_module(s), "tests/test_parcel.py": base_tests}),
        repro_tests={"tests/test_repro_overbilled.py": repro},
        hidden_tests={"tests/test_hidden_weight.py": hidden},
        filler=[Commit("units: inch conversion helper", {f"{pkg}/units.py": UNITS})],
        fact_tokens=tokens(divisor),
        tags=("logistics", "unit-conversion", "magic-number"),
        project=s.project,
        **prose(f"""
        -- statement
        Shipping quotes for large but light parcels are absurd: a 50 x 40 x 30 cm box weighing 2 kg is billed
        as 60 kg, and the invoices from the carrier do not match our quotes. tests/test_repro_overbilled.py
        shows it.
        -- fact
        Volumetric weight is the volume in cm3 divided by {divisor}.
        -- conventional_guess
        VOLUMETRIC_DIVISOR = {CONV_DIVISOR}
        -- intro_msg_fact
        {s.module}: bill the volumetric weight

        Our contract with {s.carrier} sets the volumetric divisor to {divisor} cm3 per kg.
        -- intro_msg_plain
        {s.module}: bill the volumetric weight
        -- refactor_msg
        {s.module}: add quote(); express the divisor in the carrier's unit
        -- K docs/CONVENTIONS.md
        - Shipping: volumetric weight is length x width x height in cm divided by {divisor} (the divisor in
        our contract with {s.carrier}), not the list-price divisor.
        -- F
        - (review of #612, logistics) Our negotiated volumetric divisor is {divisor} cm3/kg. Don't swap in
        5000 or 6000 from the carrier's public price list.
        -- X
        ## Return labels overbilled
        Symptom: return labels cost more than outbound labels for the same box. Fix: returns.py divided the
        volume by the wrong divisor; it now uses {divisor}, the contract value used for outbound parcels.
        -- docs/adr/0003-volumetric-weight.md
        # ADR-0003: Volumetric weight

        Status: Superseded

        Volumetric weight used the carrier's public divisor of {CONV_DIVISOR}. Superseded by the negotiated
        contract; do not use.
        -- docs/adr/0004-label-format.md
        # ADR-0004: Label format

        Status: Accepted

        Shipping labels are PDF, A6, one per page.
        -- docs/CONVENTIONS.md
        - Dimensions are centimetres and weights kilograms everywhere; convert inches at the edge.
        -- docs/CONVENTIONS.md
        - Billed weight always rounds up to the next half kilogram.
        -- .agent/preferences.md
        - (review of #577) Keep prices as two-decimal amounts in quotes shown to customers.
        -- .agent/preferences.md
        - (review of #590) Reject non-positive dimensions with a ValueError naming the parcel.
        -- .agent/past_fixes.md
        ## Pallets quoted as parcels
        Symptom: a pallet got a parcel quote. Fix: anything over the parcel size limit goes to the freight
        flow before quoting.
        """),
    )


UNITS = '''"""Unit conversion at the edge: the rest of the code works in cm and kg."""

CM_PER_INCH = 2.54
KG_PER_LB = 0.45359237


def inches_to_cm(value: float) -> float:
    """Centimetres from inches."""
    return value * CM_PER_INCH


def pounds_to_kg(value: float) -> float:
    """Kilograms from pounds."""
    return value * KG_PER_LB
'''


GENERATOR = Family(FAMILY, "knowledge-missing", "the carrier contract's volumetric divisor (cm3 per billed "
                   "kg), a non-round value", variants=(0, 1), draw=fact_of, tell=tell, space=SPACE)
