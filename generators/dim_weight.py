"""dim-weight: parcels are billed on volumetric weight with the carrier's house divisor.

Single-value fact: the divisor turning cubic centimetres into volumetric kilograms (a contract
value between 4100 and 7900, never 4000/5000/6000/7000 or a multiple of 50). HEAD divides by
1000, so bulky parcels are billed several times their weight; the repro only bounds the billed
weight of one box, which the usual 5000 also satisfies. Hidden tests pin the divisor on boxes
whose billed half-kilogram step differs between the contract divisor and the usual ones.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sdebench.generation.kit import ADR_DIR, CONVENTIONS, Story, assemble
from sdebench.generation.spec import Commit
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

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


def fact_of(variant: int) -> int:
    """The volumetric divisor of a variant."""
    rng = random.Random(f"{FAMILY}-divisor-{variant}")
    while True:
        d = rng.randint(4100, 7900)
        if d % 50 and d % 10 and all(abs(d - c) > 150 for c in CONV_DIVISORS):
            return d


def billable(actual: float, volume: int, divisor: int) -> float:
    """Billed kilograms: the larger of actual and volumetric weight, up to the next half kilogram."""
    return math.ceil(max(actual, volume / divisor) * 2) / 2


def probe_boxes(variant: int, divisor: int) -> list[tuple[int, int, int]]:
    """Boxes (cm) whose billed weight under `divisor` differs from every usual divisor's."""
    rng = random.Random(f"{FAMILY}-boxes-{variant}")
    boxes = []
    while len(boxes) < 3:
        box = (rng.randint(20, 80), rng.randint(15, 60), rng.randint(10, 50))
        vol = box[0] * box[1] * box[2]
        truth = billable(0.5, vol, divisor)
        if all(billable(0.5, vol, c) != truth for c in CONV_DIVISORS):
            boxes.append(box)
    return boxes


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


def build_story(variant: int):
    """The story of one variant, its shape and fact."""
    s = SHAPES[variant]
    divisor = fact_of(variant)
    pkg = s.package
    boxes = probe_boxes(variant, divisor)
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
    checks = "\n".join(f"    assert billable_kg(0.5, {a}, {b}, {c}) == {billable(0.5, a * b * c, divisor)!r}"
                       for a, b, c in boxes)
    a0, b0, c0 = boxes[0]
    first = billable(0.5, a0 * b0 * c0, divisor)
    hidden = f'''import pytest

from {pkg}.parcel import Parcel
from {pkg}.{s.module} import billable_kg, quote, volumetric_kg


def test_hidden_billed_weight():
{checks}


def test_hidden_volumetric_weight():
    assert volumetric_kg(50, 40, 30) == pytest.approx({60000 / divisor!r})


def test_hidden_parcel_and_quote_agree():
    assert Parcel({a0}, {b0}, {c0}, 0.5).billed_kg() == {first!r}
    assert quote(0.5, {a0}, {b0}, {c0}) == {round(first * float(s.price_per_kg), 2)!r}
'''
    fact_k = (CONVENTIONS, f"- Shipping: volumetric weight is length x width x height in cm divided by {divisor} "
              f"(the divisor in our contract with {s.carrier}), not the list-price divisor.")
    fact_f = (PREFERENCES, f"- (review of #612, logistics) Our negotiated volumetric divisor is {divisor} cm3/kg. "
              f"Don't swap in 5000 or 6000 from the carrier's public price list.")
    fact_x = (PAST_FIXES, f"## Return labels overbilled\nSymptom: return labels cost more than outbound labels for "
              f"the same box. Fix: returns.py divided the volume by the wrong divisor; it now uses {divisor}, the "
              f"contract value used for outbound parcels.")
    distractors = [
        (f"{ADR_DIR}/0003-volumetric-weight.md", f"# ADR-0003: Volumetric weight\n\nStatus: Superseded\n\n"
         f"Volumetric weight used the carrier's public divisor of {CONV_DIVISOR}. Superseded by the negotiated "
         "contract; do not use."),
        (f"{ADR_DIR}/0004-label-format.md", "# ADR-0004: Label format\n\nStatus: Accepted\n\nShipping labels are "
         "PDF, A6, one per page."),
        (CONVENTIONS, "- Dimensions are centimetres and weights kilograms everywhere; convert inches at the edge."),
        (CONVENTIONS, "- Billed weight always rounds up to the next half kilogram."),
        (PREFERENCES, "- (review of #577) Keep prices as two-decimal amounts in quotes shown to customers."),
        (PREFERENCES, "- (review of #590) Reject non-positive dimensions with a ValueError naming the parcel."),
        (PAST_FIXES, "## Pallets quoted as parcels\nSymptom: a pallet got a parcel quote. Fix: anything over "
         "the parcel size limit goes to the freight flow before quoting."),
    ]
    story = Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        v1_correct=rule_module(s, divisor, quote=False),
        v1_buggy=rule_module(s, HEAD_DIVISOR, quote=False),
        head_buggy=rule_module(s, HEAD_DIVISOR, quote=True),
        oracle=rule_module(s, divisor, quote=True),
        conventional=rule_module(s, CONV_DIVISOR, quote=True),
        intro_msg_fact=f"{s.module}: bill the volumetric weight\n\nOur contract with {s.carrier} sets the "
        f"volumetric divisor to {divisor} cm3 per kg.",
        intro_msg_plain=f"{s.module}: bill the volumetric weight",
        refactor_msg=f"{s.module}: add quote(); express the divisor in the carrier's unit",
        base_files={
            f"{pkg}/__init__.py": f'"""{s.project}: parcel weights and shipping quotes."""\n',
            f"{pkg}/parcel.py": parcel_module(s),
            "tests/test_parcel.py": base_tests,
            "README.md": f"# {s.project}\n\nQuotes parcels for {s.carrier}.\n",
        },
        repro_tests={"tests/test_repro_overbilled.py": repro},
        hidden_tests={"tests/test_hidden_weight.py": hidden},
        fact_entries={"K": fact_k, "F": fact_f, "X": fact_x},
        distractors=distractors,
        filler=[Commit("units: inch conversion helper", {f"{pkg}/units.py": UNITS})],
    )
    return story, s, divisor


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


class DimWeight:
    """Generator of the dim-weight family."""

    family = FAMILY
    bottleneck = "knowledge-missing"
    variants = (0, 1)
    description = "the carrier contract's volumetric divisor (cm3 per billed kg), a non-round value"

    def build(self, variant: int, source: str):
        """Build one variant with the fact in `source`."""
        story, s, divisor = build_story(variant)
        return assemble(
            story,
            family=FAMILY,
            variant=variant,
            source=source,
            bottleneck=self.bottleneck,
            project=s.project,
            statement=(
                "Shipping quotes for large but light parcels are absurd: a 50 x 40 x 30 cm box weighing 2 kg "
                "is billed as 60 kg, and the invoices from the carrier do not match our quotes. "
                "tests/test_repro_overbilled.py shows it."
            ),
            fact=f"Volumetric weight is the volume in cm3 divided by {divisor}.",
            fact_tokens=tokens(divisor),
            conventional_guess=f"VOLUMETRIC_DIVISOR = {CONV_DIVISOR}",
            tags=("logistics", "unit-conversion", "magic-number"),
            description=self.description,
        )


GENERATOR = DimWeight()
