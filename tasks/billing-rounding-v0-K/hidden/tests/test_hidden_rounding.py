from decimal import Decimal
from invoicer.invoice import Invoice
from invoicer.money import line_total, quantize_amount
TENTHS = [10005, 10004, 10006, -5, -6, 10015, 10014, 10016, -15, -16, 10010, 10009, 10011, -10, -11, 10030, 10029, 10031, -30, -31, 10025, 10024, 10026, -25, -26, 10075, 10074, 10076, -75, -76, 10050, 10049, 10051, -50, -51, 10150, 10149, 10151, -150, -151, 10100, 10099, 10101, -100, -101, 10300, 10299, 10301, -300, -301, 10125, 10124, 10126, -125, -126, 10375, 10374, 10376, -375, -376, 10250, 10249, 10251, -250, -251, 10750, 10749, 10751, -750, -751, 10500, 10499, 10501, -500, -501, 11500, 11499, 11501, -1500, -1501, 11000, 10999, 11001, -1000, -1001, 13000, 12999, 13001, -3000, -3001, 11250, 11249, 11251, -1250, -1251, 13750, 13749, 13751, -3750, -3751, 12500, 12499, 12501, -2500, -2501, 17500, 17499, 17501, -7500, -7501, 15000, 14999, 15001, -5000, -5001, 25000, 24999, 25001, -15000, -15001]
AMOUNTS = [Decimal(n).scaleb(-3) for n in TENTHS]

def test_hidden_policy_rounding(observe):
    observe([quantize_amount(amount) for amount in AMOUNTS])

def test_hidden_invoice_of_ties(observe):
    inv = Invoice()
    for amount in AMOUNTS:
        inv.add('line', amount)
    observe(inv.total())

def test_hidden_line_total(observe):
    observe([line_total(amount, 3) for amount in AMOUNTS[:12]])
