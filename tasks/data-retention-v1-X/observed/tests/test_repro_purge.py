from datetime import date, timedelta
from recordkeeper.retention import purge_date

def test_spring_2024_record_follows_the_new_policy(observe):
    observe.compare(purge_date(date(2024, 5, 2)), '!=', date(2024, 5, 2) + timedelta(days=730))
