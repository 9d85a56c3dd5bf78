import pytest
from batchq.scheduler import Scheduler

class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

def failures(n):
    sched = Scheduler(Clock())
    sched.add('sync')
    return [sched.record_failure('sync') for _ in range(n)]

def test_hidden_growth_between_retries(observe):
    observe(failures(3))

def test_hidden_cap(observe):
    observe(failures(40)[-1])

def test_hidden_whole_schedule(observe):
    observe(failures(40))

def test_hidden_schedule_in_milliseconds(observe):
    observe([round(seconds * 1000) for seconds in failures(40)])
