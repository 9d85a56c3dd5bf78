from datetime import date, timedelta
from purgejob.retention import REGIONS, expired, is_expired, purge_date
BASE = date(2020, 1, 1)

def test_hidden_expiry_by_age(observe):
    created = BASE + timedelta(days=1096)
    observe({r: [is_expired(created, created + timedelta(days=k), r) for k in range(0, 800, 3)] for r in REGIONS})

def test_hidden_purge_dates(observe):
    observe([purge_date(BASE + timedelta(days=851 + d), r) for r in REGIONS for d in range(0, 900, 97)])

def test_hidden_purge_run(observe):
    records = [(f'r{k}', BASE + timedelta(days=731 + 11 * k), r) for k in range(90) for r in REGIONS]
    observe(expired(records, BASE + timedelta(days=1642)))
