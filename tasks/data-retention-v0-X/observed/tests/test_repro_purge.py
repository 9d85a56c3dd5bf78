from datetime import date
from purgejob.retention import is_expired, purge_date

def test_record_is_purged_on_its_purge_date(observe):
    created = date(2023, 1, 10)
    observe.truth(is_expired(created, purge_date(created, 'us'), 'us'))
