from datetime import datetime, timedelta
from shiftplan.buckets import bucket_key
from shiftplan.timeutil import week_start
BASE = datetime(2024, 3, 4)
MOMENTS = [BASE + timedelta(minutes=30 * k, seconds=s) for k in range(1, 8 * 48) for s in (-1, 0)]

def test_hidden_week_start_of_every_half_hour(observe):
    observe([week_start(t) for t in MOMENTS])

def test_hidden_buckets_follow_the_week(observe):
    observe([bucket_key(t) for t in MOMENTS[::7]])

def test_hidden_week_start_is_idempotent(observe):
    observe([week_start(week_start(t)) for t in MOMENTS[::48]])
