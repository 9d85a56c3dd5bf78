from datetime import date
import pytest
from purgejob.retention import expired, is_expired, purge_date

def test_fresh_record_is_kept(observe):
    observe.truth(is_expired(date(2024, 3, 1), date(2024, 3, 2), 'us'), False)

def test_unknown_region(observe):
    with observe.raises():
        purge_date(date(2024, 3, 1), 'mars')

def test_purge_lists_ids(observe):
    records = [('a', date(2020, 1, 1), 'us'), ('b', date(2024, 3, 1), 'us')]
    observe.compare(expired(records, date(2024, 3, 2)), '==', ['a'])
