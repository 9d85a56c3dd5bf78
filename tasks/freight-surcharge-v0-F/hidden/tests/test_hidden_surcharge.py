from datetime import date, timedelta
from decimal import Decimal
from haulrate.quote import quote
from haulrate.surcharge import surcharge_percent, with_surcharge

def test_hidden_pickup_days(observe):
    start = date(2023, 12, 1)
    observe([quote(800, 'national', start + timedelta(days=k)) for k in range(0, 330, 2)])

def test_hidden_amounts_in_spring(observe):
    observe([with_surcharge(Decimal(c) / 100, date(2024, 5, 20)) for c in range(2500, 5000001, 49999)])

def test_hidden_percent_by_month(observe):
    observe([str(surcharge_percent(date(2024, m, 1))) for m in range(1, 13)])
