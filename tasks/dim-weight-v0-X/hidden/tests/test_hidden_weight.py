import pytest

from parcelquote.parcel import Parcel
from parcelquote.weights import billable_kg, quote, volumetric_kg

CASES = [
    ((65, 45, 15), 7.0),
    ((31, 56, 25), 7.0),
    ((22, 44, 45), 7.0),
]


@pytest.mark.parametrize("box,expected", CASES)
def test_hidden_billed_weight(box, expected):
    assert billable_kg(0.5, *box) == expected


def test_hidden_volumetric_weight():
    assert volumetric_kg(50, 40, 30) == pytest.approx(9.129640900791236)


def test_hidden_parcel_and_quote_agree():
    box, expected = CASES[0]
    assert Parcel(*box, 0.5).billed_kg() == expected
    assert quote(0.5, *box) == round(expected * 4.20, 2)
