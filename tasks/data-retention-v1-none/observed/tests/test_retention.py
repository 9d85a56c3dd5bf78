from datetime import date
import pytest
from recordkeeper.retention import expired, purge_date, retention_days

def test_2022_record(observe):
    observe.compare(retention_days(date(2022, 6, 1)), '==', 730)

def test_before_any_policy(observe):
    with observe.raises():
        purge_date(date(2020, 6, 1))

def test_purge_lists_ids(observe):
    observe.compare(expired([('a', date(2021, 3, 1)), ('b', date(2023, 3, 1))], date(2024, 1, 1)), '==', ['a'])
