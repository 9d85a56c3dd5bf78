from jobrunner.scheduler import Scheduler

class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

def test_retry_never_waits_more_than_an_hour(observe):
    sched = Scheduler(Clock())
    sched.add('sync')
    delays = [sched.record_failure('sync') for _ in range(30)]
    observe.compare(max(delays), '<=', 3600)
    observe.compare(delays, '==', sorted(delays))
