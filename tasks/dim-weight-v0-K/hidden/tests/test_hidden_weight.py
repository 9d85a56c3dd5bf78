import pytest
from parcelquote.parcel import Parcel
from parcelquote.weights import billable_kg, quote, volumetric_kg

def test_hidden_billed_weight(observe):
    observe([billable_kg(0.3, *box) for box in [(43, 25, 17), (63, 27, 21), (80, 48, 27), (29, 26, 11), (54, 42, 18), (43, 25, 46), (25, 43, 28), (72, 19, 17), (80, 32, 27), (61, 25, 30), (58, 37, 46), (76, 45, 42)]])

def test_hidden_volumetric_weight(observe):
    observe(volumetric_kg(50, 40, 30))

def test_hidden_parcel_and_quote_agree(observe):
    observe(Parcel(43, 25, 17, 0.3).billed_kg())
    observe(quote(0.3, 43, 25, 17))
