import pytest
from hookrelay.deliver import GaveUp, deliver
from hookrelay.backoff import BASE_DELAY, delay

class Flaky:

    def __init__(self, failures):
        self.failures = failures

    def __call__(self, payload):
        if self.failures:
            self.failures -= 1
            raise ConnectionError('down')
        return 'ok'

def test_first_retry_waits_the_base_delay(observe):
    observe.compare(delay(1), '==', BASE_DELAY)

def test_retry_numbers_start_at_one(observe):
    with observe.raises():
        delay(0)

def test_succeeds_after_failures(observe):
    sleeps = []
    observe.compare(deliver(Flaky(2), 'p', sleeps.append), '==', 'ok')
    observe.compare(len(sleeps), '==', 2)
    observe.compare(sleeps[0], '==', BASE_DELAY)

def test_gives_up(observe):
    with observe.raises():
        deliver(Flaky(99), 'p', lambda seconds: None, retries=3)
