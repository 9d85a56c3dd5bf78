"""Stream metrics from rows and records, and the learning-curve figure."""

from __future__ import annotations

import json

from sdebench.runs.stream_metrics import (
    forward_transfer,
    learning_curve,
    load_streams,
    markdown,
    plot_learning_curve,
    position_row,
    rows_from_records,
)
from tests.helpers import record


def stop(resolved):
    return "resolved" if resolved else "max_interventions"  # an outcome: the record's default is an error


def rec(pos, resolved, interventions, items=0, tokens=0, sid="s:both", stop_reason=None):
    return record(stream_id=sid, stream_position=pos, task_id=f"t{pos}", source="none", resolved=resolved,
                  interventions=interventions, memory_items=items, memory_x=items, memory_tokens=tokens,
                  stop_reason=stop_reason or stop(resolved))


def fresh(resolved, interventions, stop_reason=None):
    return record(resolved=resolved, interventions=interventions, stop_reason=stop_reason or stop(resolved))


def test_position_row_and_forward_transfer():
    rows = [position_row(rec(0, False, 5), fresh(False, 5)), position_row(rec(1, True, 0, 1, 90), fresh(False, 5)),
            position_row(rec(2, False, 5, 2, 180), fresh(True, 1)), position_row(rec(3, True, 2, 3, 200))]
    assert [r["transfer_interventions"] for r in rows] == [0, 5, -4, None]
    assert [r["transfer_resolved"] for r in rows] == [0, 1, -1, None]
    assert forward_transfer(rows) == {"positions": 3, "gained": 1, "lost": 1, "interventions_saved": 1, "errors": 0}
    md = markdown("s:both", rows)
    assert "| 1 | t1 | yes | 0 | 1 (0/1) | 90 | no | 5 | 5 |" in md
    assert "1 tasks gained, 1 lost, 1 interventions saved over 3 positions" in md


def test_learning_curve_averages_runs_per_position():
    rows = [position_row(rec(0, False, 5), fresh(False, 5)), position_row(rec(0, True, 1), fresh(False, 5)),
            position_row(rec(1, True, 0, 2, 100), fresh(False, 5)), position_row(rec(1, True, 2, 4, 300), fresh(True, 0))]
    curve = learning_curve(rows)
    assert [(c["position"], c["runs"], c["errors"], c["resolve_rate"], c["mean_interventions"]) for c in curve] == [
        (0, 2, 0, 0.5, 3.0), (1, 2, 0, 1.0, 1.0)]
    assert curve[1]["mean_memory_tokens"] == 200 and curve[1]["fresh_resolve_rate"] == 0.5
    assert curve[1]["mean_transfer_interventions"] == (5 + -2) / 2


def test_rows_from_records_skip_fresh_and_sort_by_position():
    records = [rec(2, True, 0, sid="a"), rec(0, False, 5, sid="a"), record(task_id="t0", resolved=True), rec(0, True, 0, sid="b")]
    by = rows_from_records(records)
    assert sorted(by) == ["a", "b"] and [r["position"] for r in by["a"]] == [0, 2]


def test_plot_and_load(tmp_path):
    rows = [position_row(rec(p, p > 0, 5 if p == 0 else 0, p, 100 * p), fresh(False, 5)) for p in range(4)]
    (tmp_path / "j1").mkdir()
    (tmp_path / "j1" / "stream.json").write_text(json.dumps({"stream_id": "s:both", "positions": rows}))
    loaded = load_streams(tmp_path)
    assert loaded == {"s:both": rows}
    out = plot_learning_curve({**loaded, "s:none": [position_row(rec(p, False, 5), None) for p in range(4)]},
                              tmp_path / "fig" / "curve.png", title="rounding")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_errored_positions_have_no_transfer_and_stay_out_of_the_curve():
    rows = [position_row(rec(0, False, 5), fresh(False, 5)),
            position_row(rec(1, False, 0, stop_reason="error"), fresh(False, 5)),  # in-stream errored
            position_row(rec(2, True, 0), fresh(False, 0, stop_reason="error")),  # fresh errored
            position_row(rec(3, True, 0), fresh(False, 5))]
    assert [r["transfer_interventions"] for r in rows] == [0, None, None, 5]
    assert rows[2]["fresh_error"] and rows[2]["fresh_resolved"] is None and not rows[1]["fresh_error"]
    assert forward_transfer(rows) == {"positions": 2, "gained": 1, "lost": 0, "interventions_saved": 5, "errors": 2}
    md = markdown("s:both", rows)
    assert "| 1 | t1 | error | 0 |" in md and "| 2 | t2 | yes | 0 | 0 (0/0) | 0 | error |  |  |" in md
    assert "over 2 positions" in md and "2 positions have no transfer: an episode ended in error" in md
    curve = learning_curve([*rows, position_row(rec(1, True, 1), fresh(False, 5))])
    one = curve[1]  # position 1: one errored run, one valid
    assert (one["runs"], one["errors"], one["resolve_rate"], one["mean_interventions"]) == (1, 1, 1.0, 1.0)
    assert one["mean_transfer_interventions"] == 4 and curve[2]["fresh_resolve_rate"] is None
    all_errored = learning_curve([position_row(rec(0, False, 0, stop_reason="error"))])[0]
    assert (all_errored["runs"], all_errored["errors"], all_errored["resolve_rate"]) == (0, 1, None)
