"""The retrieval table: every diagnosis counted in its cell, old records as `not recorded`, and the
report shows it."""

from __future__ import annotations

import math

from sdebench.analysis import report
from sdebench.analysis import retrieval as analysis
from sdebench.runs import results
from sdebench.runs.retrieval import Retrieval, Search
from tests.helpers import record


def rec(delivery: str, resolved: bool, retrieval: Retrieval | None, seed: int):
    r = record(delivery=delivery, resolved=resolved, seed=seed, stop_reason="resolved" if resolved else "max_interventions")
    r.retrieval = retrieval
    return r


def found(rank):
    return Retrieval(decisive=["K:d.md"], available=True, searchable=True, searches=[Search("q", 5, 5, rank)],
                     best_rank=rank, retrieved=rank is not None, touched=rank is not None)


RECORDS = [
    rec("memtool", True, Retrieval(**{**vars(found(2)), "fact_in_diff": True}), 0),   # resolved, retrieved
    rec("memtool", False, found(4), 1),                                                # retrieved, not used
    rec("memtool", False, found(None), 2),                                             # never retrieved
    rec("memtool", False, Retrieval(**{**vars(found(1)), "fact_in_diff": True}), 3),  # used, unresolved
    rec("memtool", False, None, 4),                                                    # not recorded (old record)
    rec("squashed", False, Retrieval(decisive=["K:d.md"]), 0),                         # no route
    rec("full", False, Retrieval(decisive=["K:d.md"], available=True, in_workspace=True, observed="partial",
                                 touched=None, retrieved=None), 0),                    # unknown
]


def test_every_episode_gets_its_diagnosis():
    e = analysis.episodes(results.frame(RECORDS))
    assert list(e["diagnosis"]) == ["resolved, retrieved", "retrieved, not used", "never retrieved", "used, unresolved",
                                    "not recorded", "no route", "unknown"]


def test_the_table_counts_retrieved_used_and_failures_per_cell():
    t = analysis.table(results.frame(RECORDS)).set_index("delivery")
    m = t.loc["memtool"]
    assert (m["episodes"], m["recorded"], m["available"], m["retrieved"], m["used"], m["resolved"]) == (5, 4, 4, 3, 2, 1)
    assert m["retrieved_rate"] == 3 / 4 and m["used_rate"] == 2 / 4
    assert (m["failed: retrieved, not used"], m["failed: never retrieved"], m["failed: used, unresolved"]) == (1, 1, 1)
    assert m["searches"] == 4 and m["search_hit_rate"] == 3 / 4 and m["mean_best_rank"] == (2 + 4 + 1) / 3
    s, f = t.loc["squashed"], t.loc["full"]
    assert s["failed: no route"] == 1 and s["available"] == 0 and math.isnan(s["mean_best_rank"])
    assert f["failed: unknown"] == 1 and math.isnan(f["retrieved_rate"])
    assert list(t.index) == ["full", "squashed", "memtool"]  # canonical delivery order


def test_frames_without_the_column_and_empty_frames():
    import pandas as pd

    old = results.frame([rec("memtool", False, None, 0)]).drop(columns=["retrieval"])
    assert analysis.table(old).iloc[0]["recorded"] == 0
    assert analysis.table(pd.DataFrame()).empty


def test_the_report_shows_the_table_and_the_episode_diagnosis(tmp_path):
    for n, r in enumerate(RECORDS):
        r.storage.key = f"k{n}"
        results.write_record(results.record_path(tmp_path / "res", r.identity, r.key), r)
    index = report.build([tmp_path / "res"], tmp_path / "out")
    html = index.read_text()
    assert "Retrieval of the decisive memory item" in html and "failed: never retrieved" in html
    page = (tmp_path / "out" / "episodes" / report.episode_name(RECORDS[1])).read_text()
    assert "retrieved, not used" in page
    assert results.summarize(RECORDS)[1]["retrieved"] == 3  # memtool row of the run summary


def test_an_errored_episode_is_diagnosed_as_an_error_and_counted_apart():
    errored = record(delivery="memtool", resolved=False, seed=9, stop_reason="error", error="model server down")
    errored.retrieval = found(None)  # would read as `never retrieved` if it were an outcome
    e = analysis.episodes(results.frame([*RECORDS, errored]))
    assert e["diagnosis"].iloc[-1] == "error" and analysis.diagnosis(None, False, errored=True) == "error"
    m = analysis.table(results.frame([*RECORDS, errored])).set_index("delivery").loc["memtool"]
    assert (m["episodes"], m["errors"], m["recorded"], m["failed: never retrieved"], m["searches"]) == (5, 1, 4, 1, 4)
    assert analysis.table(results.frame(RECORDS)).set_index("delivery").loc["memtool", "errors"] == 0
    row = next(r for r in results.summarize([*RECORDS, errored]) if r["delivery"] == "memtool")
    assert (row["episodes"], row["errors"], row["retrieved"]) == (5, 1, 3)
