import pytest

from sdebench.grading.rewards import rewards, shaped


def test_full_success_matches_the_patchbench_ceiling():
    b = shaped(True, newly_passing=3, originally_failing=3, regressions=0, all_pass=True)
    assert b.raw_sum == pytest.approx(0.9)
    assert b.normalized == pytest.approx(0.9375)


def test_partial_progress_and_regressions():
    b = shaped(True, newly_passing=1, originally_failing=2, regressions=0, all_pass=False)
    assert (b.syntax_valid_bonus, b.progress_reward, b.step_cost) == (0.3, 0.2, -0.1)
    assert b.normalized == pytest.approx((0.4 + 0.6) / 1.6)
    worse = shaped(True, newly_passing=1, originally_failing=2, regressions=1, all_pass=False)
    assert worse.regression_penalty == -0.5
    assert worse.normalized == pytest.approx((-0.1 + 0.6) / 1.6)


def test_clamped_to_unit_interval():
    assert shaped(True, 0, 2, regressions=5, all_pass=False).normalized == 0.0
    assert shaped(False, 0, 0, 0, False).normalized == pytest.approx(0.5 / 1.6)
    assert shaped(True, 2, 2, 0, True, step_cost=0.0).normalized == 1.0


def test_reward_dict_and_guard_zero():
    b = shaped(True, 1, 1, 0, True)
    d = rewards(True, 1.0, b)
    assert d["binary"] == 1.0 and d["pass_ratio"] == 1.0 and d["shaped"] == b.normalized
    assert d["shaped_breakdown"]["terminal_bonus"] == 0.3
    assert rewards(False, 0.0, None) == {
        "binary": 0.0,
        "pass_ratio": 0.0,
        "shaped": 0.0,
        "shaped_breakdown": None,
    }
