from datetime import datetime
from bookingdesk.report import Booking, weekly_counts

def item(who, start):
    return Booking(who, start)

def test_weekend_items_share_a_week(observe):
    sat, sun = (datetime(2024, 3, 9, 10), datetime(2024, 3, 10, 15))
    report = weekly_counts([item('ann', sat), item('ann', sun)])
    observe.compare(len(report), '==', 1)
    [week] = report
    observe.compare(week, '<=', sat)
