"""Episode records on disk: keys, atomic writes, torn files, loading and summaries."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd

from sdebench.runs import results, rules
from sdebench.runs.record import Identity
from tests.helpers import record

IDENT = Identity("t-v0-K", "t", 0, "K", "knowledge-missing", "memtool", "llm", "openai/gpt-x", 1)
ATTEMPT = {"attempt": 1, "stop_reason": "submitted", "turns": 4, "resolved": True, "pass_ratio": 1.0, "guards": [],
           "grade_error": None, "grade_s": 0.5, "counts": {"FAIL_TO_PASS": {"passed": 1, "total": 1}}}


def rec(**kw):
    base = {**vars(IDENT), "resolved": True, "interventions": 0, "stop_reason": "resolved", "turns": 4,
            "cost_usd": 0.5, "wall_s": 2.0, "attempts": [ATTEMPT], "tool_calls": {"bash": 2}, "key": "k1"}
    return record(**{**base, **kw})


def test_config_hash_covers_only_outcome_relevant_config():
    cfg = {"agent": {"name": "llm"}, "model": {"name": "m"}, "delivery": {"name": "inject", "token_budget": 8000},
           "limits": {"max_turns": 50}, "max_interventions": 5, "results_dir": "a", "tasks_dir": "x", "rerun": False}
    h = results.config_hash(cfg)
    assert results.config_hash({**cfg, "results_dir": "b", "tasks_dir": "y", "rerun": True, "select": {"ids": "z"}}) == h
    assert results.config_hash({**cfg, "delivery": {"name": "inject", "token_budget": 100}}) != h
    assert results.config_hash({**cfg, "max_interventions": 3}) != h
    assert results.config_hash({**cfg, "limits": {"max_turns": 5}}) != h
    # cost_tracking moved under model but was never hashed: old records keep their keys
    assert results.config_hash({**cfg, "model": {"name": "m", "cost_tracking": "ignore"}}) == h


def test_episode_key_changes_with_each_part():
    base = ("abc", "full", "oracle", "none", 0, "cfg")
    keys = {results.episode_key(*base)}
    for i, other in enumerate(("abd", "squashed", "noop", "m", 1, "cfg2")):
        parts = list(base)
        parts[i] = other
        keys.add(results.episode_key(*parts))
    assert len(keys) == 7 and results.episode_key(*base) == results.episode_key(*base)


def test_record_path_is_readable_and_safe(tmp_path):
    p = results.record_path(tmp_path, IDENT, "0123")
    assert p == tmp_path / "t-v0-K" / "memtool__llm__openai-gpt-x__s1__0123.json"
    assert results.trajectory_path(p).suffix == ".jsonl"


def test_atomic_write_and_torn_or_foreign_files(tmp_path):
    p = results.record_path(tmp_path, IDENT, "k1")
    results.write_record(p, rec())
    assert json.loads(p.read_text())["schema_version"] == 3 and results.read_record(p) == rec()
    assert [x.name for x in p.parent.iterdir()] == [p.name]  # no temp file left
    p.write_text(p.read_text()[:40])  # torn
    assert results.read_record(p) is None
    p.write_text(json.dumps({"hello": 1}))
    assert results.read_record(p) is None
    p.write_bytes(b"\xff\xfe{}")
    assert results.read_record(p) is None
    assert results.read_record(tmp_path / "missing.json") is None
    stale = p.with_name(f".{p.name}.999.tmp")
    stale.write_text("{")
    results.clean_stale(p)
    assert not stale.exists()


def test_load_reads_results_dirs_and_manifests(tmp_path):
    store = tmp_path / "store"
    a = results.record_path(store, IDENT, "k1")
    b = results.record_path(store, replace(IDENT, seed=2), "k2")
    results.write_record(a, rec())
    results.write_record(b, rec(key="k2", seed=2, resolved=False, interventions=5, stop_reason="max_interventions"))
    job = tmp_path / "multirun" / "0"
    results.append_manifest(job, a)
    df = results.load(store)
    assert isinstance(df, pd.DataFrame) and len(df) == 2 and set(df["key"]) == {"k1", "k2"}
    via_manifest = results.load(tmp_path / "multirun")
    assert list(via_manifest["key"]) == ["k1"]
    both = results.load(store, tmp_path / "multirun")
    assert len(both) == 2  # one row per key
    assert results.manifest_records(tmp_path / "multirun")[0].key == "k1"
    assert results.load(tmp_path / "empty").empty


def test_summary_rows_and_markdown(tmp_path):
    recs = [
        rec(key="1"),
        rec(key="2", resolved=False, interventions=5, stop_reason="max_interventions"),
        rec(key="3", delivery="full", resolved=False, interventions=0, stop_reason="error"),
        rec(key="4", agent="oracle", source="H", delivery="full"),
    ]
    rows = results.summarize(recs)
    mem = next(r for r in rows if r["agent"] == "llm" and r["delivery"] == "memtool")
    assert (mem["episodes"], mem["resolved"], mem["resolve_rate"], mem["interventions_capped"]) == (2, 1, 0.5, 2.5)
    assert mem["interventions_resolved"] == 0 and mem["cost_usd"] == 1.0
    full = next(r for r in rows if r["agent"] == "llm" and r["delivery"] == "full")
    assert full["errors"] == 1 and full["interventions_resolved"] is None
    # an errored episode has no outcome: 0 valid episodes, no rate (not 0) and no interventions
    assert (full["episodes"], full["resolved"], full["resolve_rate"], full["interventions_capped"]) == (0, 0, None, None)
    assert full["cost_usd"] == 0.5  # spent all the same
    md = results.markdown(rows)
    assert "### agent=llm model=openai/gpt-x" in md and "### agent=oracle model=openai/gpt-x" in md
    assert "| source | full | memtool |" in md and "| K | 0/0 (-) !1 | 1/2 (2.5) |" in md
    assert "| K | full | 0/0 | 0/0 | - | 1 | -/- | $0.5000 |" in md
    assert results.markdown([]) == "No episodes.\n"
    out = results.write_summary(tmp_path / "sweep", recs)
    assert out == (tmp_path / "sweep" / "summary.md").read_text()
    table = pd.read_parquet(tmp_path / "sweep" / "summary.parquet")
    assert len(table) == 3 and set(table.columns) >= {"source", "delivery", "resolve_rate", "interventions_capped"}


def test_stream_records_are_summarised_apart_with_tokens_and_cost():
    recs = [rec(key="1", prompt_tokens=100, completion_tokens=10),
            rec(key="2", stream_id="s1:F:0", stream_position=0, resolved=False, interventions=5,
                stop_reason="max_interventions", prompt_tokens=300, completion_tokens=30)]
    rows = results.summarize(recs)
    assert sorted(r["kind"] for r in rows) == ["static", "stream"] and all(r["episodes"] == 1 for r in rows)
    static = next(r for r in rows if r["kind"] == "static")
    assert static["resolved"] == 1 and static["mean_prompt_tokens"] == 100
    md = results.markdown(rows)
    assert md.index("### agent=llm model=openai/gpt-x\n") < md.index("(stream records, kept apart from static ones)")
    assert "| 100/10 |" in md and "| 300/30 |" in md


DIGEST = "fresh1:" + "ab" * 32


def test_task_sets_are_summarised_apart():
    """A private set, a scaled set and the published one answer different questions: never pooled."""
    recs = [rec(key="1"), rec(key="2", set_digest=DIGEST, resolved=False, interventions=5, stop_reason="max_interventions"),
            rec(key="3", memory_scale="large"), rec(key="4", set_digest=DIGEST, memory_scale="large")]
    rows = results.summarize(recs)
    assert sorted(r["task_set"] for r in rows) == ["fresh:abababababab", "fresh:abababababab@large", "published",
                                                   "published@large"]
    assert all(r["episodes"] == 1 for r in rows)
    fresh = next(r for r in rows if r["task_set"] == "fresh:abababababab")
    assert fresh["resolved"] == 0
    md = results.markdown(rows)
    assert md.index("### agent=llm model=openai/gpt-x\n") < md.index("task set=fresh:abababababab\n")
    assert "task set=published@large" in md and "task set=fresh:abababababab@large" in md


def test_feedback_policies_are_summarised_apart():
    rows = results.summarize([rec(key="1"), rec(key="2", feedback_hidden="counts")])
    assert sorted(r["feedback_hidden"] for r in rows) == ["binary", "counts"]
    md = results.markdown(rows)
    assert md.index("### agent=llm model=openai/gpt-x\n") < md.index("### agent=llm model=openai/gpt-x feedback_hidden=counts\n")


def test_check_reference_and_the_command_line(tmp_path, capsys):
    good = [rec(key="a", agent="oracle"), rec(key="b", agent="conventional", resolved=False, interventions=5),
            rec(key="c", agent="noop", resolved=False, interventions=5)]
    assert results.check_reference(good) == []
    bad = [rec(key="d", agent="oracle", resolved=False, interventions=5),
           rec(key="e", agent="conventional", resolved=False, interventions=4),
           rec(key="f", agent="noop", resolved=True), rec(key="g", agent="oracle", stop_reason="error", error="boom")]
    problems = results.check_reference(bad)
    assert len(problems) == 4 and "error: boom" in problems[3] and "noop resolved" in problems[2]
    for i, r in enumerate(good):
        results.write_record(results.record_path(tmp_path / "ok", replace(IDENT, seed=i), r.key), r)
    assert results.main([str(tmp_path / "ok"), "--check-reference"]) == 0
    assert "all outcomes as expected" in capsys.readouterr().out
    for i, r in enumerate(bad):
        results.write_record(results.record_path(tmp_path / "bad", replace(IDENT, seed=i), r.key), r)
    assert results.main([str(tmp_path / "bad"), "--check-reference"]) == 1
    assert capsys.readouterr().err.count("FAIL ") == 4
    (tmp_path / "empty").mkdir()
    assert results.main([str(tmp_path / "empty"), "--check-reference"]) == 1
    assert results.main([str(tmp_path / "missing")]) == 2


def reader(agent, task_id, delivery, resolved, competency="recall", source="K", n=0):
    return rec(key=f"{agent}{task_id}{delivery}{n}", agent=agent, task_id=task_id, delivery=delivery, source=source,
               competency=competency, resolved=resolved, resolved_at=1 if resolved else None,
               interventions=0 if resolved else 5, stop_reason="resolved" if resolved else "max_interventions")


def test_check_reference_judges_the_naive_readers(capsys):
    hard_ok = [reader("reader-latest", "h-v0-K", d, d == "oracle", "conflict") for d in ("full", "memtool", "oracle")]
    recall = [reader("reader-latest", f"r{i}-v0-K", "full", i < 1) for i in range(4)]  # 1/4 = 25 %: the minimum
    none = [reader("reader-top1", "r-v0-none", "oracle", True, source="none"),
            reader("reader-top1", "r-v0-K", "squashed", False)]
    assert results.check_reference(hard_ok + recall + none) == []
    rows = {(r["tier"], r["agent"], r["delivery"]): (r["resolved_1"], r["episodes"])
            for r in results.reader_calibration(recall + hard_ok + none)}
    assert rows == {("recall", "reader-latest", "full"): (1, 4), ("hard", "reader-latest", "full"): (0, 1),
                    ("hard", "reader-latest", "memtool"): (0, 1), ("hard", "reader-latest", "oracle"): (1, 1),
                    ("recall", "reader-top1", "squashed"): (0, 1)}  # the fact's placement none is left out
    bad = [reader("reader-latest", "h-v0-K", "memtool", True, "scope"),
           reader("reader-latest", "h-v0-K", "oracle", False, "scope"),
           reader("reader-top1", "r-v0-K", "squashed", True),
           reader("reader-top1", "r-v0-none", "full", True, source="none"),
           *[reader("reader-majority", f"r{i}-v0-K", "inject", False) for i in range(3)]]
    problems = results.check_reference(bad)
    assert len(problems) == 5, problems
    assert problems[0].startswith("delivery=inject agent=reader-majority recall tier: resolved at the first submit in "
                                  "0% of 3 episodes with memory (at least 25% required")
    assert "the naive reader resolved at the first submit (generation rule 8 says it must not)" in problems[1]
    assert "expected resolved at the first submit from the fact sentence" in problems[2]
    assert problems[3].endswith("resolved without memory") and problems[4].endswith("resolved without memory")


def test_summary_keeps_the_tiers_apart():
    recs = [rec(key="1"), rec(key="2", competency="synthesis", resolved=False, interventions=5,
                                stop_reason="max_interventions")]
    rows = results.summarize(recs)
    assert [(r["tier"], r["resolved"], r["episodes"]) for r in rows] == [("hard", 0, 1), ("recall", 1, 1)]
    md = results.markdown(rows)
    assert "tier=hard" in md and "tier=recall" in md and md.index("tier=recall") < md.index("tier=hard")
    assert "tier=" not in results.markdown(results.summarize(recs[:1]))  # recall only: nothing to tell apart


def test_summary_keeps_errored_episodes_out_of_outcome_rates():
    """2 resolved, 1 unresolved, 1 error: resolve rate 2/3 with 1 error beside it, never 2/4."""
    recs = [rec(key="1", turns=2), rec(key="2", resolved=True, interventions=2, resolved_at=3, turns=4),
            rec(key="3", resolved=False, interventions=5, stop_reason="max_interventions", turns=6),
            rec(key="4", resolved=False, interventions=0, stop_reason="error", error="model server down", turns=100,
                cost_usd=2.0)]
    (row,) = results.summarize(recs)
    assert (row["episodes"], row["errors"], row["resolved"], row["resolved_1"]) == (3, 1, 2, 1)
    assert row["resolve_rate"] == 2 / 3 and row["resolve_1"] == 1 / 3
    lo, hi = rules.wilson(2, 3)
    assert (row["resolve_rate_lo"], row["resolve_rate_hi"]) == (lo, hi)
    assert row["interventions_capped"] == (0 + 2 + 5) / 3  # the error is not counted at the cap
    assert row["mean_turns"] == (2 + 4 + 6) / 3  # per-episode means: valid episodes
    assert row["cost_usd"] == 0.5 * 3 + 2.0  # the total: every episode, the errored one included
    md = results.markdown([row])
    assert "| K | 2/3 (2.3) !1 |" in md and "2/3 = 0.67 [" in md and "1/3 = 0.33 [" in md


def test_summary_of_a_group_whose_episodes_all_errored():
    recs = [rec(key=str(i), resolved=False, interventions=0, stop_reason="error", error="boom") for i in range(2)]
    (row,) = results.summarize(recs)
    assert (row["episodes"], row["errors"], row["resolved"], row["resolved_1"]) == (0, 2, 0, 0)
    for col in ("resolve_rate", "resolve_rate_lo", "resolve_rate_hi", "resolve_1", "resolve_1_lo", "resolve_1_hi",
                "interventions_capped", "interventions_resolved", "mean_prompt_tokens", "mean_turns"):
        assert row[col] is None, col
    assert "| K | 0/0 (-) !2 |" in results.markdown([row])


def test_the_command_line_counts_errored_episodes(tmp_path, capsys):
    recs = [rec(key="a"), rec(key="b", stop_reason="error", resolved=False, error="boom")]
    for i, r in enumerate(recs):
        results.write_record(results.record_path(tmp_path, replace(IDENT, seed=i), r.key), r)
    assert results.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 episodes, 1 of them ended in error\n") and "| K | 1/1 (0.0) !1 |" in out
