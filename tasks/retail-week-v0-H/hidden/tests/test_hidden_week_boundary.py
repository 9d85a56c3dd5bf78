from datetime import datetime, timedelta

from shiftplan.buckets import bucket_key
from shiftplan.timeutil import week_start

START = datetime(2024, 3, 5, 4)


def test_hidden_week_starts_at_the_boundary():
    assert week_start(START) == START
    assert week_start(START + timedelta(days=3, hours=7)) == START


def test_hidden_moment_before_boundary_is_previous_week():
    assert week_start(START - timedelta(minutes=1)) == START - timedelta(days=7)


def test_hidden_last_moment_of_week():
    assert week_start(START + timedelta(days=7) - timedelta(seconds=1)) == START


def test_hidden_monday_midday_belongs_to_earlier_start():
    monday = datetime(2024, 3, 11, 12)
    assert bucket_key(monday) == START


def test_hidden_same_day_either_side_of_the_hour():
    early = START.replace(hour=0, minute=30)
    assert bucket_key(early) != bucket_key(START)
