from garagepay.barrier import SITES, charge

def test_hidden_every_site_over_a_day(observe):
    observe({v: [charge(m, v) for m in range(0, 1500, 13)] for v in SITES})

def test_hidden_long_stays(observe):
    observe([charge(m, v) for v in SITES for m in (1441, 2890, 10079)])
