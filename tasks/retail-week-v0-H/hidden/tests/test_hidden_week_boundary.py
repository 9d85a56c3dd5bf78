from datetime import datetime, timedelta
from shiftplan.buckets import bucket_key
from shiftplan.timeutil import week_start
BASE = datetime(2024, 3, 4)
MOMENTS = [BASE + timedelta(minutes=30 * k, seconds=s) for k in range(1, 8 * 48) for s in (-1, 0)]

def runs(values):
    """The list run-length encoded, losslessly: (index, value) where a run of equal values (same
    type, equal) starts."""
    out = []
    for i, v in enumerate(values):
        if not out or type(v) is not type(out[-1][1]) or v != out[-1][1]:
            out.append((i, v))
    return out

def test_hidden_week_start_of_every_half_hour(observe):
    observe(runs([week_start(t) for t in MOMENTS]))

def test_hidden_buckets_follow_the_week(observe):
    observe(runs([bucket_key(t) for t in MOMENTS[::7]]))

def test_hidden_week_start_is_idempotent(observe):
    observe([week_start(week_start(t)) for t in MOMENTS[::48]])
