import pytest

from batchq.scheduler import Scheduler


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def failures(n):
    sched = Scheduler(Clock())
    sched.add("sync")
    return [sched.record_failure("sync") for _ in range(n)]


def test_hidden_growth_between_retries():
    d = failures(3)
    assert d[1] == pytest.approx(2 * 2.4)
    assert d[2] == pytest.approx(2 * 2.4 ** 2)


def test_hidden_cap():
    assert failures(40)[-1] == pytest.approx(607)


def test_hidden_cap_not_reached_early():
    d = failures(40)
    first_capped = next(i for i, x in enumerate(d) if x == pytest.approx(607))
    assert d[first_capped - 1] < 607
    assert d[first_capped - 1] == pytest.approx(2 * 2.4 ** (first_capped - 1))
