from decimal import Decimal
from cargoquote.surcharge import with_surcharge

def test_surcharge_is_a_share_of_the_freight(observe):
    observe.compare(with_surcharge(Decimal('2000.00')) - Decimal('2000.00'), '>', Decimal('100.00'))
