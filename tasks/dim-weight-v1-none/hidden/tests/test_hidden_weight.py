import pytest

from courierkit.parcel import Parcel
from courierkit.dims import billable_kg, quote, volumetric_kg

CASES = [
    ((53, 46, 23), 8.0),
    ((33, 21, 41), 4.0),
    ((37, 35, 19), 3.5),
]


@pytest.mark.parametrize("box,expected", CASES)
def test_hidden_billed_weight(box, expected):
    assert billable_kg(0.5, *box) == expected


def test_hidden_volumetric_weight():
    assert volumetric_kg(50, 40, 30) == pytest.approx(8.382229673093043)


def test_hidden_parcel_and_quote_agree():
    box, expected = CASES[0]
    assert Parcel(*box, 0.5).billed_kg() == expected
    assert quote(0.5, *box) == round(expected * 3.10, 2)
