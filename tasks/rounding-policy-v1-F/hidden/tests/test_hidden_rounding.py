from decimal import Decimal
from vatcalc.returns import TaxReturn
from vatcalc.money import round_tax, rounded_product
THOUSANDTHS = [700005, 700004, 700006, -5, -6, 700015, 700014, 700016, -15, -16, 700010, 700009, 700011, -10, -11, 700030, 700029, 700031, -30, -31, 700025, 700024, 700026, -25, -26, 700075, 700074, 700076, -75, -76, 700050, 700049, 700051, -50, -51, 700150, 700149, 700151, -150, -151, 700100, 700099, 700101, -100, -101, 700300, 700299, 700301, -300, -301, 700125, 700124, 700126, -125, -126, 700375, 700374, 700376, -375, -376, 700250, 700249, 700251, -250, -251, 700750, 700749, 700751, -750, -751, 700500, 700499, 700501, -500, -501, 701500, 701499, 701501, -1500, -1501, 701000, 700999, 701001, -1000, -1001, 703000, 702999, 703001, -3000, -3001, 701250, 701249, 701251, -1250, -1251, 703750, 703749, 703751, -3750, -3751, 702500, 702499, 702501, -2500, -2501, 707500, 707499, 707501, -7500, -7501, 705000, 704999, 705001, -5000, -5001, 715000, 714999, 715001, -15000, -15001]
AMOUNTS = [Decimal(n).scaleb(-3) for n in THOUSANDTHS]

def test_hidden_policy_rounding(observe):
    observe([round_tax(amount) for amount in AMOUNTS])

def test_hidden_total_of_ties(observe):
    doc = TaxReturn()
    for amount in AMOUNTS:
        doc.add('x', amount)
    observe(doc.total())

def test_hidden_product(observe):
    observe([rounded_product(amount, 3) for amount in AMOUNTS[:12]])
