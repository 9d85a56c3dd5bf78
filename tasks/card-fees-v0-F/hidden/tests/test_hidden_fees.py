from decimal import Decimal
from paybridge.fees import fee, net_of_fee
from paybridge.settlement import settle

def test_hidden_fee_sweep(observe):
    observe([fee(Decimal(cents) / 100) for cents in range(0, 1000001, 7919)])

def test_hidden_net_sweep(observe):
    observe([net_of_fee(Decimal(cents) / 100) for cents in range(999, 2000001, 65537)])

def test_hidden_settlement(observe):
    report = settle([Decimal('12.34'), Decimal('250.00'), Decimal('9999.99'), Decimal('0.10')])
    observe((report.fees, report.net))
