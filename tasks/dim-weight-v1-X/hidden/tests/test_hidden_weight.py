import pytest
from courierkit.parcel import Parcel
from courierkit.dims import billable_kg, quote, volumetric_kg

def test_hidden_billed_weight(observe):
    observe(billable_kg(0.5, 53, 46, 23))
    observe(billable_kg(0.5, 33, 21, 41))
    observe(billable_kg(0.5, 37, 35, 19))

def test_hidden_volumetric_weight(observe):
    observe(volumetric_kg(50, 40, 30))

def test_hidden_parcel_and_quote_agree(observe):
    observe(Parcel(53, 46, 23, 0.5).billed_kg())
    observe(quote(0.5, 53, 46, 23))
