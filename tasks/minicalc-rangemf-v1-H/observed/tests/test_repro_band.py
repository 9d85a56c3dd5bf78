from exprlab.api import calc

def test_value_far_above_range_is_not_inside(observe):
    observe.compare(calc('within(level, 10, 20)', level=50), '<', 1)
