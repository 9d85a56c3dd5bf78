from decimal import Decimal
from paybridge.fees import fee

def test_fee_is_a_small_share_of_the_payment(observe):
    observe.compare(Decimal('0.00'), '<', fee(Decimal('40.00')), '<', Decimal('10.00'))
