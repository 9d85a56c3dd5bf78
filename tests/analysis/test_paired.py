"""Paired statistics: exact McNemar, the paired bootstrap over tasks, the sample-size formula (checked by simulation)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdebench.analysis import paired
from sdebench.analysis import tables as analysis


def test_mcnemar_exact_matches_the_binomial_by_hand():
    assert paired.mcnemar_exact(0, 0) == 1.0
    assert paired.mcnemar_exact(0, 5) == 2 / 32 == paired.mcnemar_exact(5, 0)
    assert paired.mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert paired.mcnemar_exact(4, 4) == 1.0  # symmetric: capped at 1
    assert paired.mcnemar_exact(3, 5) == pytest.approx(2 * sum(math.comb(8, i) for i in range(4)) / 256)


def test_bootstrap_keeps_a_tasks_seeds_together_and_is_seeded():
    # task t1: both seeds +1, t2: both 0; a draw is the share of t1 among 2 drawn tasks
    lo, hi = paired.bootstrap_diff(["t1", "t1", "t2", "t2"], [1, 1, 0, 0], 2000, 3)
    assert (lo, hi) == (0.0, 1.0)
    assert paired.bootstrap_diff(["t1", "t2", "t3"], [1, 0, 1], 500, 7) == paired.bootstrap_diff(["t1", "t2", "t3"], [1, 0, 1], 500, 7)
    assert paired.bootstrap_diff(["t", "u"], [1, 1], 100, 0) == (1.0, 1.0)


def test_tasks_needed_formula_by_hand_and_its_errors():
    # p0 = 0.5, d = 0.1: q = 0.6*0.5 + 0.5*0.4 = 0.5
    n = (1.959963984540054 * math.sqrt(0.5) + 0.8416212335729143 * math.sqrt(0.5 - 0.01)) ** 2 / 0.01
    assert paired.tasks_needed(0.5, 0.1) == math.ceil(n) == 391
    assert paired.tasks_needed(0.2, 0.3, q=0.3) < paired.tasks_needed(0.2, 0.3)  # agreeing outcomes need fewer
    with pytest.raises(ValueError):
        paired.tasks_needed(0.8, 0.3)
    t = analysis.tasks_needed_table()
    assert list(t.columns) == ["baseline resolve@1", "+0.10", "+0.20", "+0.30", "+0.50"]
    assert t.loc[t["baseline resolve@1"] == "0.50", "+0.10"].item() == "391"


@pytest.mark.parametrize("p0,delta", [(0.1, 0.3), (0.3, 0.2)])
def test_tasks_needed_gives_about_80_percent_power_by_simulation(p0, delta):
    # independent outcomes per unit, as the formula assumes; the exact test at n units, 4000 sweeps
    n = paired.tasks_needed(p0, delta)
    rng = np.random.default_rng(11)
    p1 = p0 + delta
    a = rng.random((4000, n)) < p1
    b = rng.random((4000, n)) < p0
    only_a, only_b = (a & ~b).sum(axis=1), (~a & b).sum(axis=1)
    power = np.mean([paired.mcnemar_exact(int(x), int(y)) < 0.05 for x, y in zip(only_a, only_b, strict=True)])
    assert 0.72 <= power <= 0.88, (n, power)


def rec(task, seed, delivery, resolved_at, agent="a", key=None):
    return {"agent": agent, "model": "m", "source": "K", "task_id": task, "seed": seed, "delivery": delivery,
            "resolved": resolved_at is not None, "resolved_at": resolved_at, "interventions": (resolved_at or 6) - 1,
            "key": key or f"{task}-{seed}-{delivery}-{agent}"}


def test_paired_comparisons_count_discordant_units_on_the_same_tasks():
    rows = []
    # oracle resolves t1..t4 at the first submit; squashed only t1, and t2 only after feedback (not resolve@1)
    for t in ("t1", "t2", "t3", "t4"):
        rows.append(rec(t, 0, "oracle", 1))
    rows += [rec("t1", 0, "squashed", 1), rec("t2", 0, "squashed", 3), rec("t3", 0, "squashed", None),
             rec("t4", 0, "squashed", None),
             rec("t5", 0, "squashed", 1),  # no oracle run of t5: not a pair
             rec("t1", 0, "oracle", None, agent="b")]  # another agent: its own group, no pair
    t = analysis.paired_comparisons(pd.DataFrame(rows), n_boot=1000, seed=2)
    assert len(t) == 1
    r = t.iloc[0]
    assert (r["comparison"], r["units"], r["tasks"]) == ("oracle - squashed", 4, 4)  # oriented as the gaps
    assert (r["both"], r["only_a"], r["only_b"], r["neither"]) == (1, 3, 0, 0)
    assert (r["resolve_1_a"], r["resolve_1_b"], r["difference"]) == (1.0, 0.25, 0.75)
    assert r["mcnemar_p"] == 0.25  # 2 * (1/2)^3
    assert 0 <= r["ci_low"] <= 0.75 <= r["ci_high"] and r["n_boot"] == 1000
    pd.testing.assert_frame_equal(t, analysis.paired_comparisons(pd.DataFrame(rows), n_boot=1000, seed=2))


def test_paired_comparisons_keep_one_record_per_unit():
    rows = [rec("t1", 0, "oracle", 1), rec("t1", 0, "squashed", None, key="a"), rec("t1", 0, "squashed", 1, key="b")]
    r = analysis.paired_comparisons(pd.DataFrame(rows), n_boot=10).iloc[0]
    assert (r["comparison"], r["units"], r["duplicates"], r["only_a"]) == ("oracle - squashed", 1, 1, 1)  # key "a" kept


def test_the_documented_table_is_the_computed_one():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "analysis.md").read_text()
    for row in paired.sample_size_rows():
        line = "| " + " | ".join(str(v) for v in row.values()) + " |"
        assert line in doc, line
