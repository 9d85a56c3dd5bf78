from decimal import Decimal
from cartwise.checkout import checkout
from cartwise.stacking import combined_rate
BASKET = [('desk', '200.00', 1)]

def test_hidden_two_codes_compound(observe):
    r = checkout(BASKET, ['NEWS10', 'CREW20'])
    observe(r.total)

def test_hidden_two_codes_compound_any_order(observe):
    observe(checkout(BASKET, ['FRIEND15', 'FRIEND15', 'TRADE20']).total)
    observe(checkout(BASKET, ['TRADE20', 'FRIEND15']).total)
    observe(checkout(BASKET, ['TRADE20', 'FRIEND15']).total)

def test_hidden_cap_on_combined_discount(observe):
    r = checkout(BASKET, ['CREW20', 'TRADE20', 'GOLD20'])
    observe(r.discount)
    observe(r.total)

def test_hidden_rate_helper(observe):
    observe(combined_rate([10, 20]))
    observe(combined_rate([20, 20, 20, 10]))
