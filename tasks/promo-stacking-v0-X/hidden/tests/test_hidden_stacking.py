from decimal import Decimal
from tillkit.checkout import checkout
from tillkit.stacking import combined_rate
BASKET = [('desk', '200.00', 1)]

def test_hidden_two_codes_compound(observe):
    r = checkout(BASKET, ['SPRING10', 'STAFF20'])
    observe(r.total)

def test_hidden_two_codes_compound_any_order(observe):
    observe(checkout(BASKET, ['WELCOME15', 'WELCOME15', 'BULK20']).total)
    observe(checkout(BASKET, ['BULK20', 'WELCOME15']).total)
    observe(checkout(BASKET, ['BULK20', 'WELCOME15']).total)

def test_hidden_cap_on_combined_discount(observe):
    r = checkout(BASKET, ['STAFF20', 'BULK20', 'VIP20'])
    observe(r.discount)
    observe(r.total)

def test_hidden_rate_helper(observe):
    observe(combined_rate([10, 20]))
    observe(combined_rate([20, 20, 20, 10]))
