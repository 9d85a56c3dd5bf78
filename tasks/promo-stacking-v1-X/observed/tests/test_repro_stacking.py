from cartwise.checkout import checkout
BASKET = [('lamp', '60.00', 1)]

def test_second_code_lowers_the_total(observe):
    one = checkout(BASKET, ['NEWS10']).total
    two = checkout(BASKET, ['NEWS10', 'FRIEND15']).total
    observe.compare(two, '<', one)
