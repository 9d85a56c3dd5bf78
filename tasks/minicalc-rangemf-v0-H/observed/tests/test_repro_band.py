from minicalc.api import calc

def test_value_far_above_range_is_not_inside(observe):
    observe.compare(calc('member(temp, 10, 20)', temp=50), '<', 1)
