import pytest

from hookrelay.backoff import delay, schedule


def test_hidden_growth_second_retry():
    assert delay(2) == pytest.approx(0.655)


def test_hidden_growth_third_retry():
    assert delay(3) == pytest.approx(0.8580500000000001)


def test_hidden_ceiling():
    assert delay(40) == pytest.approx(34.0)


def test_hidden_schedule_head():
    assert schedule(3) == pytest.approx([0.5, 0.655, 0.8580500000000001])
