from datetime import datetime, timedelta
import pytest
from shiftplan.buckets import group_by_week
from shiftplan.report import Shift, weekly_hours

def item(who, start, hours=2):
    return Shift(who, start, start + timedelta(hours=hours))

def test_empty_report(observe):
    observe.compare(weekly_hours([]), '==', {})

def test_one_item(observe):
    report = weekly_hours([item('ann', datetime(2024, 3, 7, 10))])
    [(week, per)] = report.items()
    observe.compare(per, '==', {'ann': 2.0})
    observe.compare(week, '<=', datetime(2024, 3, 7, 10))

def test_items_a_month_apart_are_in_different_weeks(observe):
    report = weekly_hours([item('ann', datetime(2024, 3, 7, 10)), item('ann', datetime(2024, 4, 4, 10))])
    observe.compare(len(report), '==', 2)

def test_group_by_week_orders_items(observe):
    a, b = (datetime(2024, 3, 1, 9), datetime(2024, 2, 1, 9))
    groups = group_by_week([a, b], lambda x: x)
    observe.compare([v for vs in groups.values() for v in vs], '==', [b, a])

def test_invalid_item_rejected(observe):
    with observe.raises():
        weekly_hours([Shift('ann', datetime(2024, 3, 6, 12), datetime(2024, 3, 6, 11))])
