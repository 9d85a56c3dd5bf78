import pytest
from courierkit.parcel import Parcel
from courierkit.dims import billable_kg, quote, volumetric_kg

def test_hidden_billed_weight(observe):
    observe([billable_kg(0.3, *box) for box in [(48, 21, 48), (35, 18, 47), (57, 25, 47), (68, 21, 26), (20, 19, 27), (63, 54, 22), (73, 60, 16), (51, 40, 48), (45, 40, 20), (44, 18, 37), (57, 22, 50), (60, 55, 45)]])

def test_hidden_volumetric_weight(observe):
    observe(volumetric_kg(50, 40, 30))

def test_hidden_parcel_and_quote_agree(observe):
    observe(Parcel(48, 21, 48, 0.3).billed_kg())
    observe(quote(0.3, 48, 21, 48))
