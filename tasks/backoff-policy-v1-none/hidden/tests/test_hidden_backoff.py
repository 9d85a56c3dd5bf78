import pytest

from syncagent.retry import delay, schedule


def test_hidden_growth_second_retry():
    assert delay(2) == pytest.approx(0.47)


def test_hidden_growth_third_retry():
    assert delay(3) == pytest.approx(0.8835999999999999)


def test_hidden_ceiling():
    assert delay(40) == pytest.approx(33.0)


def test_hidden_schedule_head():
    assert schedule(3) == pytest.approx([0.25, 0.47, 0.8835999999999999])
