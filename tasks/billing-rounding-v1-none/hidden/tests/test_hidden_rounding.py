from decimal import Decimal
from yenbill.invoice import Invoice
from yenbill.money import line_total, quantize_amount
TENTHS = [120005, 120004, 120006, -5, -6, 120015, 120014, 120016, -15, -16, 120010, 120009, 120011, -10, -11, 120030, 120029, 120031, -30, -31, 120025, 120024, 120026, -25, -26, 120075, 120074, 120076, -75, -76, 120050, 120049, 120051, -50, -51, 120150, 120149, 120151, -150, -151, 120100, 120099, 120101, -100, -101, 120300, 120299, 120301, -300, -301, 120125, 120124, 120126, -125, -126, 120375, 120374, 120376, -375, -376, 120250, 120249, 120251, -250, -251, 120750, 120749, 120751, -750, -751, 120500, 120499, 120501, -500, -501, 121500, 121499, 121501, -1500, -1501, 121000, 120999, 121001, -1000, -1001, 123000, 122999, 123001, -3000, -3001, 121250, 121249, 121251, -1250, -1251, 123750, 123749, 123751, -3750, -3751, 122500, 122499, 122501, -2500, -2501, 127500, 127499, 127501, -7500, -7501, 125000, 124999, 125001, -5000, -5001, 135000, 134999, 135001, -15000, -15001]
AMOUNTS = [Decimal(n).scaleb(-1) for n in TENTHS]

def test_hidden_policy_rounding(observe):
    observe([quantize_amount(amount) for amount in AMOUNTS])

def test_hidden_invoice_of_ties(observe):
    inv = Invoice()
    for amount in AMOUNTS:
        inv.add('line', amount)
    observe(inv.total())

def test_hidden_line_total(observe):
    observe([line_total(amount, 3) for amount in AMOUNTS[:12]])
