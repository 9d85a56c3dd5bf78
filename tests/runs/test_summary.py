"""The one summary engine: the cell, the never-pooled keys, and the figures every summary shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdebench.analysis import tables
from sdebench.runs import results, summary
from tests.helpers import record

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "experiments" / "reference"


def test_the_cell_is_defined_once():
    assert results.GROUP is summary.CELL
    # the tables name a memory system in the delivery column (`memtool/kg`), so their cell has no column for it
    assert tuple(k for k in summary.CELL if k != "memory") == tables.CELL and summary.CELL[-1] == "memory"
    assert summary.grouping(("family", "tier")) == ("kind", "task_set", "feedback_hidden", "tier", "family")


def test_figures_by_hand_with_an_error_and_a_limit():
    recs = [record(key="1", resolved=True, resolved_at=1, stop_reason="resolved", cost_usd=0.5, prompt_tokens=10,
                   tool_calls={"memory_search": 2}, delivery_info={"inject_tokens": 40}),
            record(key="2", resolved=True, interventions=2, resolved_at=3, stop_reason="resolved", cost_usd=0.5),
            record(key="3", resolved=False, interventions=1, max_interventions=4, stop_reason="max_turns"),
            record(key="4", stop_reason="error", error="down", cost_usd=2.0, prompt_tokens=1000)]
    (row,) = summary.summarize(recs, ("agent",))
    assert (row["episodes"], row["errors"], row["resolved"], row["resolved_1"]) == (3, 1, 2, 1)
    assert row["interventions_capped"] == (0 + 2 + 4) / 3  # the limited one at its own cap, the error not at all
    assert row["interventions_resolved"] == 1.0 and row["cost_usd"] == 3.0 and row["mean_cost_usd"] == 1 / 3
    assert row["mean_prompt_tokens"] == 10 / 3 and row["mean_inject_tokens"] == 40.0 and row["mean_memory_search"] == 2 / 3
    (none,) = summary.summarize(recs[3:], ("agent",))
    assert none["episodes"] == 0 and none["resolve_rate"] is None and none["resolve_1_lo"] is None


def test_groups_by_any_field_name_and_keep_stream_records_apart():
    recs = [record(key="1", family="a", resolved=True, stop_reason="resolved"),
            record(key="2", family="b", stop_reason="max_interventions"),
            record(key="3", family="a", stream_id="s:F", stream_position=0, stop_reason="max_interventions")]
    rows = results.summarize(recs, ("identity.family",))
    assert [(r["kind"], r["identity.family"], r["episodes"]) for r in rows] == [("static", "a", 1), ("static", "b", 1),
                                                                                ("stream", "a", 1)]
    with pytest.raises(KeyError):
        summary.value(recs[0], "famly")


def test_the_run_summary_and_the_tables_give_the_same_figures_on_the_reference_sweep():
    recs = results.read_records(REFERENCE)
    rows = {(r["agent"], r["source"], r["delivery"]): r for r in results.summarize(recs)}
    t = tables.by_cell(results.load(REFERENCE))
    assert len(t) == len(rows) == 75  # 3 agents x 5 sources x 5 deliveries
    for cell in t.to_dict("records"):
        row = rows[(cell["agent"], cell["source"], cell["delivery"])]
        for m in ("episodes", "errors", "resolved", "resolved_1", "resolve_rate", "interventions_capped", "cost_usd"):
            assert row[m] == cell[m], m
