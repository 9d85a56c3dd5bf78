"""Streams: order and shuffling, and the learner's learning curve with and without carried memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sdebench.runs import results
from sdebench.runs.config import settings
from sdebench.runs.stream import StreamError, StreamSpec, order_tasks, run_stream
from sdebench.runs.stream_metrics import forward_transfer
from tests.conftest import ROOT

ROUNDING = ["rounding-policy-v0-none", "billing-rounding-v0-F", "rounding-policy-v1-none", "rounding-policy-v2-none",
            "billing-rounding-v1-none"]


def stream_cfg(tmp_path, delivery="full", **stream):
    return {"agent": {"name": "learner"}, "model": {"name": "none"}, "delivery": {"name": delivery}, "seed": 0,
            "max_interventions": 5, "limits": {"max_turns": 50, "max_cost_usd": 2.0, "max_wall_s": 600},
            "sandbox": {"backend": "unsafe_local"}, "tasks_dir": str(ROOT / "tasks"),
            "results_dir": str(tmp_path / "results"), "stream": {"name": "t", "tasks": ROUNDING, **stream}}


def test_order_and_shuffle_by_seed(tmp_path):
    plain = [t.id for t in order_tasks(StreamSpec.of(stream_cfg(tmp_path)["stream"]), settings({"tasks_dir": str(ROOT / "tasks")}))]
    assert plain == ROUNDING
    orders = []
    for seed in (0, 1, 0):
        spec = StreamSpec.of(stream_cfg(tmp_path, shuffle=True, shuffle_seed=seed)["stream"])
        orders.append([t.id for t in order_tasks(spec, settings({"tasks_dir": str(ROOT / "tasks")}))])
        assert spec.stream_id() == f"t:both:shuffle{seed}"
    assert orders[0] == orders[2] and orders[0] != orders[1] and sorted(orders[1]) == sorted(ROUNDING)


def test_bad_stream_input_is_one_line_error(tmp_path):
    with pytest.raises(StreamError, match="stream.carry: unknown carry 'everything'"):
        StreamSpec.of(stream_cfg(tmp_path, carry="everything")["stream"])
    spec = StreamSpec.of(stream_cfg(tmp_path, tasks=["no-such-task"])["stream"])
    with pytest.raises(StreamError, match="stream task: no task 'no-such-task'"):
        order_tasks(spec, settings({"tasks_dir": str(ROOT / "tasks")}))


def run_cli(tmp_path, carry: str) -> dict:
    """One stream through the real entry point; returns its stream.json."""
    out = tmp_path / f"run-{carry}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "sdebench.stream", "agent=learner", "delivery=full", "sandbox=local",
         f"stream.carry={carry}", f"tasks_dir={ROOT / 'tasks'}", f"results_dir={tmp_path / 'results'}",
         f"hydra.run.dir={out}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"### stream rounding:{carry}" in proc.stdout
    return json.loads((out / "stream.json").read_text())


@pytest.mark.slow
@pytest.mark.bwrap
def test_learner_interventions_fall_only_when_memory_is_carried(tmp_path):
    runs = {carry: run_cli(tmp_path, carry) for carry in ("both", "none", "X", "F")}
    curve = {c: [p["interventions"] for p in r["positions"]] for c, r in runs.items()}
    # Position 1 holds the fact in its own preferences file; every other task is a `none` placement.
    # The learner fails position 0 either way; once it has solved position 1, its past solve (X)
    # carries the fact to the rest. Feedback alone (F) does not: the grader redacts fact tokens.
    assert curve == {"both": [5, 0, 0, 0, 0], "X": [5, 0, 0, 0, 0], "none": [5, 0, 5, 5, 5], "F": [5, 0, 5, 5, 5]}
    for carry, c in curve.items():
        early, late = sum(c[:2]) / 2, sum(c[2:]) / 3
        assert (late < early) == (carry in ("both", "X")), carry
    both, none = runs["both"]["positions"], runs["none"]["positions"]
    assert [p["resolved"] for p in both] == [False, True, True, True, True]
    assert [(p["memory_f"], p["memory_x"]) for p in both] == [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3)]
    assert all(a["memory_tokens"] < b["memory_tokens"] for a, b in zip(both, both[1:], strict=False))
    assert all(p["memory_items"] == 0 and p["memory_tokens"] == 0 for p in none)
    assert [p["memory_f"] for p in runs["F"]["positions"]] == [0, 1, 1, 2, 3]
    # forward transfer against the same tasks run fresh
    assert [p["fresh_interventions"] for p in both] == [5, 0, 5, 5, 5]
    assert forward_transfer(both) == {"positions": 5, "gained": 3, "lost": 0, "interventions_saved": 15, "errors": 0}
    assert forward_transfer(none) == {"positions": 5, "gained": 0, "lost": 0, "interventions_saved": 0, "errors": 0}
    # records carry the stream id and position; fresh episodes were run once and reused by later streams
    recs = results.read_records(tmp_path / "results")
    streamed = sorted((r.stream.stream_id, r.stream.stream_position) for r in recs if r.stream)
    assert streamed == sorted((f"rounding:{c}", p) for c in curve for p in range(5))
    assert len([r for r in recs if not r.stream]) == 5


@pytest.mark.slow
@pytest.mark.parametrize("delivery,expected", [("memtool", [0, 0, 0]), ("inject", [0, 0, 0]), ("squashed", [5, 5, 5])])
def test_carried_memory_reaches_the_learner_through_each_delivery(tmp_path, delivery, expected):
    tasks = ["billing-rounding-v0-F", "rounding-policy-v1-none", "rounding-policy-v2-none"]
    cfg = stream_cfg(tmp_path, delivery, tasks=tasks, carry="both", fresh=False)
    rows = run_stream(cfg, tmp_path / "job")
    assert [r["interventions"] for r in rows] == expected
    assert all(r["fresh_resolved"] is None for r in rows)
    # a second run reuses every record (same config, same carried memory)
    again = run_stream(cfg, tmp_path / "job2")
    assert again == rows
    assert len(results.read_records(tmp_path / "results")) == 3


def test_streams_rerun_error_records_like_run(tmp_path, caplog):
    """run_or_reuse is shared with `sdebench.run`: an episode that ended in an error runs again unless retry_errors=false."""
    import logging

    patch = tmp_path / "fix.patch"
    cfg = {**stream_cfg(tmp_path, "squashed", tasks=ROUNDING[:1], fresh=False),
           "agent": {"name": "patch", "patch": str(patch)}}
    patch.write_text("not a patch\n")
    first = run_stream(cfg, tmp_path / "job")
    recs = results.read_records(tmp_path / "results")
    assert len(recs) == 1 and first[0]["resolved"] is False
    # make the first record an error record, as a crashed episode leaves it
    path = next((tmp_path / "results").rglob("*.json"))
    rec = results.read_record(path)
    rec.outcome.stop_reason, rec.outcome.error = "error", "RuntimeError: boom"
    results.write_record(path, rec)
    with caplog.at_level(logging.INFO, logger="sdebench.run"):
        run_stream({**cfg, "retry_errors": False}, tmp_path / "job")
        assert "already done" in caplog.text and "running it again" not in caplog.text
        caplog.clear()
        run_stream(cfg, tmp_path / "job")
        assert "running it again" in caplog.text
    assert results.read_record(path).outcome.stop_reason != "error"


def test_a_stream_dry_run_builds_everything_and_runs_nothing(tmp_path, capsys):
    assert run_stream({**stream_cfg(tmp_path), "dry_run": True}, tmp_path / "job") == []
    out = capsys.readouterr().out
    assert out.count("stream t:both: ") == len(ROUNDING) and "delivery=full agent=learner" in out
    assert not (tmp_path / "results").exists()
