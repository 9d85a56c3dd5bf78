from datetime import datetime
import pytest
from bookingdesk.buckets import group_by_week
from bookingdesk.report import Booking, weekly_counts

def item(who, start):
    return Booking(who, start)

def test_empty_report(observe):
    observe.compare(weekly_counts([]), '==', {})

def test_one_item(observe):
    report = weekly_counts([item('ann', datetime(2024, 3, 7, 10))])
    [(week, per)] = report.items()
    observe.compare(per, '==', {'ann': 1})
    observe.compare(week, '<=', datetime(2024, 3, 7, 10))

def test_items_a_month_apart_are_in_different_weeks(observe):
    report = weekly_counts([item('ann', datetime(2024, 3, 7, 10)), item('ann', datetime(2024, 4, 4, 10))])
    observe.compare(len(report), '==', 2)

def test_group_by_week_orders_items(observe):
    a, b = (datetime(2024, 3, 1, 9), datetime(2024, 2, 1, 9))
    groups = group_by_week([a, b], lambda x: x)
    observe.compare([v for vs in groups.values() for v in vs], '==', [b, a])

def test_invalid_item_rejected(observe):
    with observe.raises():
        weekly_counts([Booking('ann', datetime(2024, 3, 6, 12), guests=0)])
