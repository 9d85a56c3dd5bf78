"""Retrieval diagnostics per cell: was the decisive memory item retrieved, and was it used?

Reads the `retrieval` field of episode records (sdebench.runs.retrieval; docs/retrieval.md).
Each episode gets one `diagnosis`:

- resolved: `resolved, retrieved` | `resolved, not retrieved` | `resolved, unknown`
- failed:   `no route` (the delivery gave no way to the decisive item: squashed, oracle, a `none`
            placement, an inject budget it missed) | `never retrieved` | `retrieved, not used`
            (retrieved, but no line of the final diff carries a fact token) | `used, unresolved`
            (the fact is in the diff, yet a test still fails) | `unknown` (an installed CLI whose
            own reads sdebench cannot see)
- `not recorded` for records written before the diagnostics existed.
- `error` for an episode that ended in error: it has no outcome to explain.

`table` counts them per cell (agent, model, source, delivery) with the retrieved and used rates,
and for memtool the searches, the share that returned the decisive item and the mean best rank,
over the episodes that did not end in error (`episodes`; `errors` counts the others).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sdebench.analysis.tables import CELL, ordered
from sdebench.runs import results
from sdebench.runs.rules import feedback_policy, is_error, task_set

FAILURES = ("no route", "never retrieved", "retrieved, not used", "used, unresolved", "unknown")
COLUMNS = [*CELL, "episodes", "errors", "recorded", "available", "retrieved", "retrieved_rate", "used", "used_rate", "resolved",
           *(f"failed: {f}" for f in FAILURES), "searches", "search_hit_rate", "mean_best_rank"]


def diagnosis(retrieval: Any, resolved: bool, errored: bool = False) -> str:
    """The diagnosis of one episode from its `retrieval` object (dict or None), its outcome and whether it ended in error."""
    if errored:
        return "error"  # no outcome, so no failure to explain
    if not isinstance(retrieval, dict):
        return "not recorded"
    got = retrieval.get("retrieved")
    if resolved:
        return "resolved, unknown" if got is None else ("resolved, retrieved" if got else "resolved, not retrieved")
    if retrieval.get("fact_in_diff"):
        return "used, unresolved"
    if got is None:
        return "unknown"
    if got:
        return "retrieved, not used"
    return "never retrieved" if retrieval.get("available") else "no route"


def episodes(df: pd.DataFrame) -> pd.DataFrame:
    """One row per episode: its cell, task, seed, outcome and retrieval columns, plus `diagnosis`."""
    d = df.copy()
    recs = results.records(d)
    if "task_set" not in d:
        d["task_set"] = [task_set(r) for r in recs]
    d["feedback_hidden"] = [feedback_policy(r) for r in recs]
    for col in (*CELL, "task_id"):
        d[col] = d[col].fillna("?").astype(str) if col in d else "?"
    d["resolved"] = d["resolved"].fillna(False).astype(bool) if "resolved" in d else False
    d["seed"] = d.get("seed", 0)
    ret = d["retrieval"] if "retrieval" in d else pd.Series([None] * len(d), index=d.index)
    r = [x if isinstance(x, dict) else None for x in ret]
    d["recorded"] = [x is not None for x in r]
    d["available"] = [bool(x and x.get("available")) for x in r]
    d["retrieved"] = [None if x is None else x.get("retrieved") for x in r]
    d["used"] = [bool(x and x.get("fact_in_diff")) for x in r]
    d["best_rank"] = [x.get("best_rank") if x else None for x in r]
    d["searches"] = [len(x.get("searches") or []) if x else 0 for x in r]
    d["search_hits"] = [sum(1 for s in x.get("searches") or [] if isinstance(s, dict) and s.get("rank")) if x else 0 for x in r]
    d["errored"] = [is_error(x) for x in recs]
    d["diagnosis"] = [diagnosis(x, bool(res), err) for x, res, err in zip(r, d["resolved"], d["errored"], strict=True)]
    cols = [*CELL, "task_id", "seed", "resolved", "errored", "recorded", "available", "retrieved", "used", "best_rank", "searches",
            "search_hits", "diagnosis"]
    return d[cols].reset_index(drop=True)


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per cell: episodes, how many had a route to / retrieved / used the decisive item, and why the failures failed
    (over the episodes that did not end in error; `errors` counts the others)."""
    e = episodes(df)
    if e.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for key, every in e.groupby(list(CELL), sort=True):
        g = every[~every["errored"]]
        rec = g[g["recorded"]]
        known = rec[rec["retrieved"].notna()]
        retrieved = int((known["retrieved"] == True).sum())  # noqa: E712 - object column of True/False/None
        ranks = [float(x) for x in rec["best_rank"] if x is not None and not pd.isna(x)]
        row = dict(zip(CELL, key, strict=True))
        row.update({
            "episodes": len(g),
            "errors": int(every["errored"].sum()),
            "recorded": len(rec),
            "available": int(rec["available"].sum()),
            "retrieved": retrieved,
            "retrieved_rate": retrieved / len(known) if len(known) else np.nan,
            "used": int(rec["used"].sum()),
            "used_rate": float(rec["used"].mean()) if len(rec) else np.nan,
            "resolved": int(g["resolved"].sum()),
        })
        for f in FAILURES:
            row[f"failed: {f}"] = int((g["diagnosis"] == f).sum())
        n_search = int(rec["searches"].sum())
        row["searches"] = n_search
        row["search_hit_rate"] = int(rec["search_hits"].sum()) / n_search if n_search else np.nan
        row["mean_best_rank"] = float(np.mean(ranks)) if ranks else np.nan
        rows.append(row)
    return ordered(pd.DataFrame(rows, columns=COLUMNS))
