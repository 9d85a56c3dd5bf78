from decimal import Decimal
from paybridge.fees import fee, net_of_fee
from paybridge.settlement import settle

def test_no_amount_no_fee(observe):
    observe.compare(fee(Decimal('0.00')), '==', Decimal('0.00'))

def test_fee_is_in_cents(observe):
    observe.compare(fee(Decimal('19.99')).as_tuple().exponent, '==', -2)

def test_net_is_amount_minus_fee(observe):
    observe.compare(net_of_fee(Decimal('80.00')), '==', Decimal('80.00') - fee(Decimal('80.00')))

def test_settlement_adds_up(observe):
    report = settle([Decimal('10.00'), Decimal('25.50')])
    observe.compare(report.gross, '==', Decimal('35.50'))
    observe.compare(report.net, '==', report.gross - report.fees)
