import pytest
from syncagent.retry import delay, schedule

def test_hidden_growth_second_retry(observe):
    observe(delay(2))

def test_hidden_growth_third_retry(observe):
    observe(delay(3))

def test_hidden_ceiling(observe):
    observe(delay(40))

def test_hidden_schedule_head(observe):
    observe(schedule(3))

def test_hidden_schedule_in_milliseconds(observe):
    observe([round(seconds * 1000) for seconds in schedule(40)])
