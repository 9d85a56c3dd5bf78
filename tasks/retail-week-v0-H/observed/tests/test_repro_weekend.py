from datetime import datetime, timedelta
from shiftplan.report import Shift, weekly_hours

def item(who, start, hours=2):
    return Shift(who, start, start + timedelta(hours=hours))

def test_weekend_items_share_a_week(observe):
    sat, sun = (datetime(2024, 3, 9, 10), datetime(2024, 3, 10, 15))
    report = weekly_hours([item('ann', sat), item('ann', sun)])
    observe.compare(len(report), '==', 1)
    [week] = report
    observe.compare(week, '<=', sat)
