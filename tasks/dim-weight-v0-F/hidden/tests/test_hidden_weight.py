import pytest
from parcelquote.parcel import Parcel
from parcelquote.weights import billable_kg, quote, volumetric_kg

def test_hidden_billed_weight(observe):
    observe(billable_kg(0.5, 65, 45, 15))
    observe(billable_kg(0.5, 31, 56, 25))
    observe(billable_kg(0.5, 22, 44, 45))

def test_hidden_volumetric_weight(observe):
    observe(volumetric_kg(50, 40, 30))

def test_hidden_parcel_and_quote_agree(observe):
    observe(Parcel(65, 45, 15, 0.5).billed_kg())
    observe(quote(0.5, 65, 45, 15))
