from datetime import date
from haulrate.quote import quote

def test_april_pickup_pays_the_spring_surcharge(observe):
    observe.compare(quote(800, 'national', date(2024, 4, 15)), '!=', quote(800, 'national', date(2024, 2, 15)))
