from decimal import Decimal
from cargoquote.quote import quote
from cargoquote.surcharge import with_surcharge

def test_hidden_amount_sweep(observe):
    observe([with_surcharge(Decimal(c) / 100) for c in range(2500, 5000001, 49999)])

def test_hidden_quotes(observe):
    observe([quote(w, z) for z in ('local', 'regional', 'national') for w in (1, 80, 500, 2750)])
