from batchq.scheduler import Scheduler

class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

def test_new_job_is_due(observe):
    sched = Scheduler(Clock())
    sched.add('nightly')
    observe.compare(sched.due(), '==', ['nightly'])

def test_failed_job_waits(observe):
    sched = Scheduler(Clock())
    sched.add('nightly')
    observe.compare(sched.record_failure('nightly'), '>', 0)
    observe.compare(sched.due(), '==', [])

def test_first_retry_waits_the_base_delay(observe):
    sched = Scheduler(Clock())
    sched.add('nightly')
    observe.compare(sched.record_failure('nightly'), '==', 2)

def test_success_resets(observe):
    clock = Clock()
    sched = Scheduler(clock)
    sched.add('nightly')
    sched.record_failure('nightly')
    sched.record_success('nightly')
    observe.compare(sched.due(), '==', ['nightly'])
