from datetime import date, timedelta
from recordkeeper.retention import expired, purge_date, retention_days
BASE = date(2020, 1, 1)

def test_hidden_days_kept_by_creation_day(observe):
    start = BASE + timedelta(days=1339)
    observe([retention_days(start + timedelta(days=k)) for k in range(0, 640, 3)])

def test_hidden_purge_dates(observe):
    observe([purge_date(BASE + timedelta(days=1404 + k)) for k in range(0, 500, 23)])

def test_hidden_purge_run(observe):
    records = [(f'r{k}', BASE + timedelta(days=731 + 9 * k)) for k in range(135)]
    observe(expired(records, BASE + timedelta(days=1978)))
