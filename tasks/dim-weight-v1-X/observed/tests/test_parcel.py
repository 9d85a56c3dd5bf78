import pytest
from courierkit.parcel import Parcel

def test_small_heavy_parcel_bills_actual_weight(observe):
    observe.compare(Parcel(10, 10, 10, 3.2).billed_kg(), '==', 3.5)

def test_weight_rounds_up_to_half_kilo(observe):
    observe.compare(Parcel(5, 5, 5, 1.01).billed_kg(), '==', 1.5)

def test_dimensions_must_be_positive(observe):
    with observe.raises():
        Parcel(0, 10, 10, 1)
