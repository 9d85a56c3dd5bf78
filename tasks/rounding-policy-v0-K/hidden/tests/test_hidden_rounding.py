from decimal import Decimal
from journal.entries import Entry
from journal.amounts import round_posting, rounded_product
THOUSANDTHS = [2500005, 2500004, 2500006, -5, -6, 2500015, 2500014, 2500016, -15, -16, 2500010, 2500009, 2500011, -10, -11, 2500030, 2500029, 2500031, -30, -31, 2500025, 2500024, 2500026, -25, -26, 2500075, 2500074, 2500076, -75, -76, 2500050, 2500049, 2500051, -50, -51, 2500150, 2500149, 2500151, -150, -151, 2500100, 2500099, 2500101, -100, -101, 2500300, 2500299, 2500301, -300, -301, 2500125, 2500124, 2500126, -125, -126, 2500375, 2500374, 2500376, -375, -376, 2500250, 2500249, 2500251, -250, -251, 2500750, 2500749, 2500751, -750, -751, 2500500, 2500499, 2500501, -500, -501, 2501500, 2501499, 2501501, -1500, -1501, 2501000, 2500999, 2501001, -1000, -1001, 2503000, 2502999, 2503001, -3000, -3001, 2501250, 2501249, 2501251, -1250, -1251, 2503750, 2503749, 2503751, -3750, -3751, 2502500, 2502499, 2502501, -2500, -2501, 2507500, 2507499, 2507501, -7500, -7501, 2505000, 2504999, 2505001, -5000, -5001, 2515000, 2514999, 2515001, -15000, -15001]
AMOUNTS = [Decimal(n).scaleb(-3) for n in THOUSANDTHS]

def test_hidden_policy_rounding(observe):
    observe([round_posting(amount) for amount in AMOUNTS])

def test_hidden_total_of_ties(observe):
    doc = Entry()
    for amount in AMOUNTS:
        doc.add('x', amount)
    observe(doc.total())

def test_hidden_product(observe):
    observe([rounded_product(amount, 3) for amount in AMOUNTS[:12]])
