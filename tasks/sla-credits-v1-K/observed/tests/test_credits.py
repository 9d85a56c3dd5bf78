from decimal import Decimal
from slabook.credits import credit, credit_note
from slabook.invoice import amount_due

def test_credit_is_in_cents(observe):
    observe.compare(credit(Decimal('19.99'), 5000).as_tuple().exponent, '==', -2)

def test_amount_due_is_fee_minus_credit(observe):
    fee = Decimal('1000.00')
    observe.compare(amount_due(fee, 5000), '==', fee - credit(fee, 5000))

def test_note_shows_the_downtime(observe):
    observe.truth(credit_note(Decimal('10.00'), 100000).startswith('downtime 100000 min'))
