"""Analysis tables: hand-computed numbers on synthetic records, and a real reference sweep."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdebench.analysis import tables as analysis
from sdebench.runs import results, rules


def rec(task, seed, delivery, resolved, interventions, stop=None, **kw):
    return {"agent": "a", "model": "m", "source": "K", "family": "fam", "bottleneck": "knowledge-missing",
            "task_id": task, "seed": seed, "delivery": delivery, "resolved": resolved,
            "interventions": interventions, "stop_reason": stop or ("resolved" if resolved else "max_interventions"),
            "cost_usd": kw.get("cost", 0.0), "turns": kw.get("turns", 1), "prompt_tokens": kw.get("pt", 0),
            "completion_tokens": kw.get("ct", 0), "tool_calls": kw.get("calls", {}),
            "delivery_info": kw.get("info", {})}


@pytest.fixture
def synthetic() -> pd.DataFrame:
    return pd.DataFrame([
        rec("t1", 0, "squashed", False, 5, cost=0.5, turns=10, pt=100, ct=10, calls={"bash": 2}),
        rec("t2", 0, "squashed", True, 2, cost=0.25, turns=4, pt=50, ct=5, calls={"memory_search": 1}),
        # stopped by a limit after 1 intervention: counted at the cap (5) in interventions_capped
        rec("t1", 1, "squashed", False, 1, stop="max_turns", cost=0.25, turns=50, pt=10, ct=1),
        rec("t2", 1, "squashed", True, 0, cost=0.0, turns=2, pt=0, ct=0, calls={"memory_search": 3}),
        rec("t1", 0, "oracle", True, 1),
        rec("t2", 0, "oracle", True, 0),
        rec("t1", 1, "oracle", True, 0),
        rec("t2", 1, "oracle", True, 3),
    ])


def test_cell_metrics_match_hand_computed_values(synthetic):
    t = analysis.by_cell(synthetic).set_index("delivery")
    sq, orc = t.loc["squashed"], t.loc["oracle"]
    assert list(t.index) == ["squashed", "oracle"]  # canonical delivery order, not alphabetical
    assert (sq["episodes"], sq["resolved"], sq["resolve_rate"]) == (4, 2, 0.5)
    assert sq["interventions_capped"] == (5 + 2 + 5 + 0) / 4
    assert sq["interventions_resolved"] == (2 + 0) / 2
    assert sq["cost_usd"] == 1.0 and sq["mean_cost_usd"] == 0.25
    assert sq["mean_tokens"] == (110 + 55 + 11 + 0) / 4
    assert sq["mean_turns"] == (10 + 4 + 50 + 2) / 4
    assert sq["mean_memory_search"] == (0 + 1 + 0 + 3) / 4
    assert (orc["resolve_rate"], orc["interventions_capped"], orc["interventions_resolved"]) == (1.0, 1.0, 1.0)


def test_cap_comes_from_the_record_when_present(synthetic):
    synthetic["max_interventions"] = 3
    sq = analysis.by_cell(synthetic).set_index("delivery").loc["squashed"]
    assert sq["interventions_capped"] == (3 + 2 + 3 + 0) / 4


def test_gap_estimate_and_bootstrap_interval(synthetic):
    g = analysis.gaps(synthetic, n_boot=4000, seed=1)
    assert list(g["gap"]) == ["oracle - squashed"]  # only pairs with both deliveries present
    row = g.iloc[0]
    # paired diffs: t1 -> (1, 1), t2 -> (0, 0); estimate 0.5
    assert row["estimate"] == 0.5
    assert (row["tasks"], row["seeds"], row["units"], row["n_boot"]) == (2, 2, 4, 4000)
    # a draw is the share of t1 among 2 drawn tasks: 0, 0.5 or 1 with p = 1/4, 1/2, 1/4
    assert (row["ci_low"], row["ci_high"]) == (0.0, 1.0)
    again = analysis.gaps(synthetic, n_boot=4000, seed=1)
    pd.testing.assert_frame_equal(g, again)


def test_constant_gap_has_a_point_interval(synthetic):
    d = synthetic.copy()
    d.loc[d["delivery"] == "squashed", "resolved"] = False
    g = analysis.gaps(d, n_boot=500).iloc[0]
    assert (g["estimate"], g["ci_low"], g["ci_high"]) == (1.0, 1.0, 1.0)


def test_bootstrap_resamples_seeds_within_tasks():
    # one task, seeds with diffs 0 and 1: only the seed level can vary the draw
    a = pd.DataFrame({"task_id": ["t", "t"], "seed": [0, 1], "resolved": [1.0, 1.0]})
    b = pd.DataFrame({"task_id": ["t", "t"], "seed": [0, 1], "resolved": [1.0, 0.0]})
    out = analysis.bootstrap_gap(a, b, "resolved", 2000, np.random.default_rng(0))
    assert out["estimate"] == 0.5 and (out["ci_low"], out["ci_high"]) == (0.0, 1.0)


def test_intervention_distribution_counts(synthetic):
    d = analysis.intervention_distribution(synthetic)
    sq = d[d["delivery"] == "squashed"].set_index(["interventions", "resolved"])["episodes"].to_dict()
    assert sq == {(0, True): 1, (1, False): 1, (2, True): 1, (5, False): 1}
    assert d["episodes"].sum() == len(synthetic)


def test_by_bottleneck_and_family_group_all_episodes(synthetic):
    assert analysis.by_bottleneck(synthetic)["episodes"].sum() == 8
    f = analysis.by_family(synthetic)
    assert set(f["family"]) == {"fam"} and f["episodes"].tolist() == [4, 4]


def test_empty_frame_gives_empty_tables():
    assert analysis.by_cell(pd.DataFrame()).empty
    assert analysis.gaps(pd.DataFrame(columns=["agent"])).empty


@pytest.mark.slow
def test_real_reference_sweep(small_sweep):
    df = results.load(small_sweep)
    assert len(df) == 12 and (df["max_interventions"] == 5).all()
    v = analysis.validity(df)
    assert v["all_valid"].all() and v["episodes"].sum() == 12, analysis.invalid_episodes(df)
    cell = analysis.by_cell(df).set_index(["agent", "source", "delivery"])
    assert (cell.xs("oracle")["resolve_rate"] == 1.0).all()
    assert (cell.xs("conventional")["interventions_capped"] == 5.0).all()
    assert (cell.xs("noop")["resolved"] == 0).all()
    g = analysis.gaps(df, n_boot=200)
    assert set(g["source"]) == {"H", "K"} and (g["estimate"] == 0.0).all()
    dist = analysis.intervention_distribution(df)
    conv = dist[dist["agent"] == "conventional"]
    assert conv["interventions"].tolist() == [5, 5] and conv["episodes"].sum() == 4


# --- stream and static records are never pooled -------------------------------------------------

def test_mixed_stream_and_static_records_are_refused_in_one_line(synthetic):
    mixed = synthetic.assign(stream_id=[None] * 6 + ["rounding-both-0"] * 2)
    with pytest.raises(analysis.MixedRecords) as e:
        analysis.by_cell(mixed)
    msg = str(e.value)
    assert "\n" not in msg and "2 stream records" in msg and "6 static records" in msg and "split_streams" in msg


def test_split_streams_separates_and_each_part_tables_alone(synthetic):
    mixed = synthetic.assign(stream_id=[None] * 6 + ["s"] * 2)
    static, stream = analysis.split_streams(mixed)
    assert (len(static), len(stream)) == (6, 2)
    assert set(stream["stream_id"]) == {"s"} and static["stream_id"].isna().all()
    assert analysis.by_cell(static)["episodes"].sum() == 6
    assert analysis.by_cell(stream)["episodes"].sum() == 2
    # a frame without the column at all is static
    assert len(analysis.split_streams(synthetic)[0]) == 8


def test_stream_runner_writes_to_its_own_default_dir():
    from hydra import compose, initialize_config_dir

    conf = str(Path(__file__).resolve().parents[2] / "conf")
    with initialize_config_dir(config_dir=conf, version_base=None):
        run, stream = compose("config"), compose("stream_run")
    assert stream.results_dir == analysis.STREAM_RESULTS != run.results_dir
    assert stream.sandbox.results_dir == analysis.STREAM_RESULTS  # the sandbox masks the dir actually written


def test_headline_puts_resolve_at_1_first_with_intervals(synthetic):
    h = analysis.headline(synthetic).set_index("delivery")
    assert list(h.columns[4:7]) == ["resolve@1 [95% CI]", "resolve@cap [95% CI]", "interventions"]
    # squashed: t2 seed 0 resolved after 2 interventions (not at the first submit), t2 seed 1 at the first
    assert h.loc["squashed", "resolve@1 [95% CI]"] == "1/4 = 0.25 [0.05, 0.70]"
    assert h.loc["squashed", "resolve@cap [95% CI]"] == "2/4 = 0.50 [0.15, 0.85]"
    assert h.loc["squashed", "interventions"] == "3.00"


def test_gaps_note_says_gaps_need_oracle_runs(synthetic):
    assert analysis.gaps_note(synthetic) == ""
    note = analysis.gaps_note(synthetic[synthetic["delivery"] == "squashed"])
    assert "needs `delivery=oracle` runs" in note and note.endswith("deliveries here: squashed.")


def test_inject_size_tokens_and_cost_per_cell(synthetic):
    d = pd.concat([synthetic, pd.DataFrame([
        rec("t1", 0, "inject", True, 0, cost=0.1, pt=1000, ct=20, info={"inject_tokens": 300, "inject_mode": "whole"}),
        rec("t2", 0, "inject", False, 5, cost=0.3, pt=3000, ct=60, info={"inject_tokens": 500}),
    ])], ignore_index=True)
    t = analysis.by_cell(d).set_index("delivery")
    inj, sq = t.loc["inject"], t.loc["squashed"]
    assert (inj["mean_inject_tokens"], inj["mean_prompt_tokens"], inj["mean_completion_tokens"]) == (400, 2000, 40)
    assert inj["mean_cost_usd"] == pytest.approx(0.2) and inj["cost_usd"] == pytest.approx(0.4)
    assert np.isnan(sq["mean_inject_tokens"])  # nothing injected: no figure, not a zero
    assert (sq["mean_prompt_tokens"], sq["mean_completion_tokens"]) == ((100 + 50 + 10) / 4, (10 + 5 + 1) / 4)
    h = analysis.headline(d).set_index("delivery")
    assert (h.loc["inject", "inject tokens"], h.loc["inject", "prompt tokens"], h.loc["inject", "cost USD"]) == ("400", "2000", "0.2000")
    assert h.loc["squashed", "inject tokens"] == ""


def test_two_task_sets_are_never_pooled(synthetic):
    """The same task ids run on a private set: cells, gaps and paired comparisons keep the sets apart."""
    fresh = synthetic.assign(set_digest="fresh1:" + "cd" * 32, resolved=False, interventions=5,
                             stop_reason="max_interventions")
    both = pd.concat([synthetic, fresh], ignore_index=True)
    t = analysis.by_cell(both)
    assert sorted(set(t["task_set"])) == ["fresh:cdcdcdcdcdcd", "published"]
    pub = t[(t["task_set"] == "published") & (t["delivery"] == "oracle")].iloc[0]
    assert (pub["episodes"], pub["resolve_rate"]) == (4, 1.0)  # not diluted by the private set's failures
    g = analysis.gaps(both, n_boot=200)
    assert sorted(g["task_set"]) == ["fresh:cdcdcdcdcdcd", "published"]
    assert g.set_index("task_set").loc["published", "estimate"] == 0.5
    p = analysis.paired_comparisons(both, n_boot=50)
    assert set(p["task_set"]) == {"published", "fresh:cdcdcdcdcdcd"} and (p["units"] == 4).all()
    h = analysis.headline(both)
    assert "task_set" in h.columns and "task_set" not in analysis.headline(synthetic).columns


def test_two_feedback_policies_are_never_pooled(synthetic):
    """Episodes graded with counts feedback (a searcher's extra signal) stay apart from binary ones."""
    counts = synthetic.assign(feedback_hidden="counts", resolved=True, interventions=2, stop_reason="resolved")
    both = pd.concat([synthetic.assign(feedback_hidden="binary"), counts], ignore_index=True)
    t = analysis.by_cell(both)
    assert sorted(set(t["feedback_hidden"])) == ["binary", "counts"]
    sq = t[(t["feedback_hidden"] == "binary") & (t["delivery"] == "squashed")].iloc[0]
    assert (sq["episodes"], sq["resolve_rate"]) == (4, 0.5)
    assert "feedback_hidden" in analysis.headline(both).columns
    assert "feedback_hidden" not in analysis.headline(synthetic).columns  # no column: binary only


def test_the_tiers_are_never_pooled_and_competencies_have_their_table(synthetic):
    """Hard-tier episodes (a competency other than recall) stay apart from recall ones in every table."""
    hard = synthetic.assign(task_id=synthetic["task_id"] + "h", competency="conflict", resolved=False,
                            interventions=5, stop_reason="max_interventions")
    both = pd.concat([synthetic, hard], ignore_index=True)  # the synthetic records predate competencies: recall
    t = analysis.by_cell(both)
    assert list(dict.fromkeys(t["tier"])) == ["recall", "hard"]
    rec_oracle = t[(t["tier"] == "recall") & (t["delivery"] == "oracle")].iloc[0]
    assert (rec_oracle["episodes"], rec_oracle["resolve_rate"]) == (4, 1.0)  # not diluted by the hard failures
    g = analysis.gaps(both, n_boot=100)
    assert list(g["tier"]) == ["recall", "hard"] and list(g["estimate"]) == [0.5, 0.0]
    p = analysis.paired_comparisons(both, n_boot=20)
    assert list(p["tier"]) == ["recall", "hard"] and (p["units"] == 4).all()
    c = analysis.by_competency(both)
    assert list(zip(c["tier"], c["competency"], c["delivery"], c["episodes"], strict=True)) == [
        ("recall", "recall", "squashed", 4), ("recall", "recall", "oracle", 4),
        ("hard", "conflict", "squashed", 4), ("hard", "conflict", "oracle", 4)]
    assert "tier" in analysis.headline(both).columns and "tier" not in analysis.headline(synthetic).columns
    v = analysis.validity(both.assign(agent="oracle"))
    assert set(v["tier"]) == {"recall", "hard"}
    assert set(analysis.by_family(both)["competency"]) == {"recall", "conflict"}
    assert set(analysis.by_bottleneck(both)["tier"]) == {"recall", "hard"}


# --- episodes that ended in error are counted apart, never as unresolved ------------------------

def error(task, seed, delivery, **kw):
    return rec(task, seed, delivery, False, 0, stop="error", **kw)


def test_errored_episodes_are_counted_apart_from_outcomes():
    """2 resolved, 1 unresolved, 1 error: resolve rate 2/3 with errors=1, not 2/4."""
    d = pd.DataFrame([rec("t1", 0, "squashed", True, 0, cost=0.5, turns=2, pt=100),
                      rec("t2", 0, "squashed", True, 1, cost=0.5, turns=4, pt=200),
                      rec("t3", 0, "squashed", False, 5, cost=0.5, turns=6, pt=300),
                      error("t4", 0, "squashed", cost=3.0, turns=90, pt=9000)])
    c = analysis.by_cell(d).iloc[0]
    assert (c["episodes"], c["errors"], c["resolved"], c["resolved_1"]) == (3, 1, 2, 1)
    assert c["resolve_rate"] == 2 / 3 and c["resolve_1"] == 1 / 3
    assert (c["resolve_rate_lo"], c["resolve_rate_hi"]) == rules.wilson(2, 3)
    assert c["interventions_capped"] == (0 + 1 + 5) / 3 and c["interventions_resolved"] == 0.5
    assert c["cost_usd"] == 4.5 and c["mean_cost_usd"] == 0.5  # total: every episode; mean: valid ones
    assert (c["mean_turns"], c["mean_prompt_tokens"]) == (4, 200)
    h = analysis.headline(d).iloc[0]
    assert (h["episodes"], h["errors"]) == (3, 1)
    assert h["resolve@cap [95% CI]"].startswith("2/3 = 0.67 [") and h["interventions"] == "2.00"
    m = analysis.metrics(d, ["agent"]).iloc[0]
    assert (m["episodes"], m["errors"], m["resolve_rate"]) == (3, 1, 2 / 3)


def test_a_cell_whose_episodes_all_errored_has_no_rates(synthetic):
    d = pd.concat([synthetic, pd.DataFrame([error("t1", 0, "inject", cost=0.2), error("t2", 0, "inject")])],
                  ignore_index=True)
    t = analysis.by_cell(d).set_index("delivery")
    inj = t.loc["inject"]
    assert (inj["episodes"], inj["errors"], inj["resolved"], inj["cost_usd"]) == (0, 2, 0, 0.2)
    for col in ("resolve_rate", "resolve_rate_lo", "resolve_rate_hi", "resolve_1", "resolve_1_lo", "interventions_capped",
                "interventions_resolved", "mean_cost_usd", "mean_tokens", "mean_turns"):
        assert np.isnan(inj[col]), col
    assert (t.loc["squashed", "errors"], t.loc["squashed", "resolve_rate"]) == (0, 0.5)
    h = analysis.headline(d).set_index("delivery")
    assert list(h.columns[3:6]) == ["episodes", "errors", "resolve@1 [95% CI]"]  # shown: a cell has errors
    assert (h.loc["inject", "episodes"], h.loc["inject", "errors"], h.loc["inject", "resolve@1 [95% CI]"]) == (0, 2, "0/0")
    assert h.loc["inject", "interventions"] == h.loc["inject", "cost USD"] == ""
    assert "errors" not in analysis.headline(synthetic).columns  # hidden when no cell has any
    only = analysis.by_cell(pd.DataFrame([error("t1", 0, "oracle")])).iloc[0]  # a frame with no valid episode at all
    assert (only["episodes"], only["errors"]) == (0, 1) and np.isnan(only["resolve_rate"])


def test_gaps_and_paired_comparisons_drop_units_with_an_errored_side(synthetic):
    d = synthetic.copy()
    # t1 seed 0 squashed (unresolved) ends in error instead: that unit leaves both tables
    i = d.index[(d["task_id"] == "t1") & (d["seed"] == 0) & (d["delivery"] == "squashed")][0]
    d.loc[i, "stop_reason"] = "error"
    g = analysis.gaps(d, n_boot=200).iloc[0]
    assert (g["units"], g["errors"], g["estimate"]) == (3, 1, 1 / 3)  # diffs 1 (t1 s1), 0, 0
    p = analysis.paired_comparisons(d, n_boot=50).iloc[0]
    assert (p["comparison"], p["units"], p["errors"]) == ("oracle - squashed", 3, 1)
    # resolve@1 oracle/squashed: t2 s0 yes/no, t1 s1 yes/no, t2 s1 no/yes
    assert (p["only_a"], p["only_b"], p["both"], p["neither"]) == (2, 1, 0, 0)
    assert analysis.paired_comparisons(synthetic, n_boot=50).iloc[0]["errors"] == 0


def test_a_pair_whose_units_all_errored_shows_no_statistics():
    d = pd.DataFrame([rec("t1", 0, "oracle", True, 0), error("t1", 0, "squashed")])
    p = analysis.paired_comparisons(d, n_boot=50).iloc[0]
    assert (p["units"], p["errors"], p["duplicates"]) == (0, 1, 0)
    assert np.isnan(p["difference"]) and np.isnan(p["mcnemar_p"]) and np.isnan(p["ci_low"])
    g = analysis.gaps(d, n_boot=50).iloc[0]
    assert (g["units"], g["errors"]) == (0, 1) and np.isnan(g["estimate"])


def test_a_unit_keeps_its_valid_record_over_an_errored_one():
    d = pd.DataFrame([{**rec("t1", 0, "oracle", True, 0), "key": "z"},
                      {**error("t1", 0, "squashed"), "key": "a"}, {**rec("t1", 0, "squashed", True, 0), "key": "b"}])
    p = analysis.paired_comparisons(d, n_boot=10).iloc[0]
    assert (p["units"], p["errors"], p["duplicates"], p["both"]) == (1, 0, 0, 1)


def test_intervention_distribution_and_validity_leave_errors_out():
    d = pd.DataFrame([{**rec("t1", 0, "squashed", True, 0), "agent": "oracle"},
                      {**error("t2", 0, "squashed"), "agent": "oracle"},
                      {**rec("t1", 0, "squashed", False, 5), "agent": "noop"},
                      {**error("t2", 0, "squashed"), "agent": "noop"}])
    dist = analysis.intervention_distribution(d)
    assert dist["episodes"].sum() == 2 and set(dist["interventions"]) == {0, 5}
    v = analysis.validity(d).set_index("agent")
    # the errored oracle is not an oracle failure, nor the errored noop a noop success
    assert (v.loc["oracle", "episodes"], v.loc["oracle", "errors"], v.loc["oracle", "valid"]) == (1, 1, 1)
    assert (v.loc["noop", "episodes"], v.loc["noop", "errors"], v.loc["noop", "valid"]) == (1, 1, 1)
    assert v["all_valid"].all() and analysis.invalid_episodes(d).empty


def test_bootstrap_gap_leaves_errored_rows_out():
    a = pd.DataFrame({"task_id": ["t", "t"], "seed": [0, 1], "resolved": [1.0, 1.0], "stop_reason": ["resolved"] * 2})
    b = pd.DataFrame({"task_id": ["t", "t"], "seed": [0, 1], "resolved": [0.0, 1.0],
                      "stop_reason": ["error", "resolved"]})
    out = analysis.bootstrap_gap(a, b, "resolved", 100, np.random.default_rng(0))
    assert (out["estimate"], out["units"], out["errors"]) == (0.0, 1, 1)
