from parcelquote.parcel import Parcel
from parcelquote.weights import billable_kg

def test_bulky_light_box_is_not_overbilled(observe):
    observe.compare(billable_kg(2, 50, 40, 30), '<', 20)

def test_parcel_uses_the_same_rule(observe):
    observe.compare(Parcel(50, 40, 30, 2).billed_kg(), '<', 20)
