"""Tables over episode records: resolve rate, interventions, cost, tokens, turns and memory use,
by cell (source x delivery), competency, bottleneck and family; ablation gaps with bootstrap intervals.

The tier of a task (`recall`, or `hard` for every other competency: docs/hard.md) is part of every
cell, gap and paired comparison, as the task set and the feedback policy are: a hard task and a
recall task answer different questions (is the fact delivered; is memory used well), so no table
pools them. `by_competency` splits them further.

Every function takes the DataFrame of `sdebench.runs.results.load(...)` (or of `prepare`) and returns
a new DataFrame; nothing is printed or written here.

Interventions are reported two ways: `interventions_capped` counts every unresolved episode at
the cap (`max_interventions`, whatever stopped it), so a cell that gives up early is not made to
look cheap; `interventions_resolved` averages over resolved episodes only.

An episode that ended in error (`rules.is_error`: column `errored` after `prepare`) has no outcome:
every rate, mean, gap, paired comparison and distribution is over the other episodes (`episodes`),
and the errored ones are counted apart (`errors`). Only `cost_usd`, a total, includes them: that
money was spent. A group whose episodes all ended in error has 0 episodes and NaN rates.

Stream records (`stream_id` set: the task ran with memory carried from earlier tasks) and static
records answer different questions, so no table pools them: `prepare` refuses a mixed frame, and
`split_streams` separates one.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from sdebench.analysis import paired as paired_stats
from sdebench.errors import AnalysisError
from sdebench.runs import results, rules, summary

DEFAULT_CAP = rules.DEFAULT_CAP
DELIVERIES = summary.DELIVERIES
SOURCES = summary.SOURCES
# The headline ablation gaps, each (minuend, subtrahend) delivery: a positive oracle - squashed
# gap means the fact matters; memtool/inject/full - oracle says how much of it delivery loses.
GAPS = (("oracle", "squashed"), ("memtool", "oracle"), ("inject", "oracle"), ("full", "oracle"))
# The cell, its canonical orders and every per-group figure come from the one summary engine
# (sdebench.runs.summary): task set x feedback policy x tier x agent x model x source x delivery.
# the tables name a memory system in the delivery column (`memtool/kg`, see `prepare`): no column of its own
CELL = tuple(k for k in summary.CELL if k != "memory")
TIERS = summary.TIERS
COMPETENCIES = summary.COMPETENCIES
N_BOOT = 2000
STREAM_RESULTS = "stream_results"  # the stream runner's default results_dir (conf/stream_run.yaml)


class MixedRecords(AnalysisError, ValueError):
    """Stream and static records in one frame."""


def is_stream(df: pd.DataFrame) -> pd.Series:
    """Whether each row is a stream record (`stream_id` set)."""
    if "stream_id" not in df:
        return pd.Series(False, index=df.index)
    return df["stream_id"].notna() & (df["stream_id"].astype(str) != "")


def split_streams(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(static records, stream records) of `df`, each with a fresh index."""
    s = is_stream(df)
    return df[~s].reset_index(drop=True), df[s].reset_index(drop=True)


def check_unmixed(df: pd.DataFrame) -> None:
    """Raise MixedRecords (one line saying how to separate them) if `df` holds stream and static records."""
    s = is_stream(df)
    n_stream = int(s.sum())
    if 0 < n_stream < len(df):
        raise MixedRecords(
            f"{n_stream} stream records (stream_id set) mixed with {len(df) - n_stream} static records: "
            "analyse them apart (tables.split_streams(df), or give the stream runs their own results_dir, "
            f"default {STREAM_RESULTS}/)")


def prepare(df: pd.DataFrame, cap: int = DEFAULT_CAP) -> pd.DataFrame:
    """A copy of `df` with the derived columns the tables use (errored, tokens, capped interventions, memory_search calls).

    Raises MixedRecords if `df` mixes stream and static records (see `split_streams`).
    """
    check_unmixed(df)
    out = df.copy()
    for col, default in (("resolved", False), ("interventions", 0), ("cost_usd", 0.0), ("turns", 0),
                         ("prompt_tokens", 0), ("completion_tokens", 0), ("seed", 0), ("wall_s", 0.0)):
        if col not in out:
            out[col] = default
        out[col] = out[col].fillna(default)
    for col in ("agent", "model", "source", "delivery", "bottleneck", "family", "task_id", "stop_reason"):
        if col not in out:
            out[col] = "?"
        out[col] = out[col].fillna("?").astype(str)
    out["resolved"] = out["resolved"].astype(bool)
    out["interventions"] = out["interventions"].astype(int)
    out["tokens"] = (out["prompt_tokens"] + out["completion_tokens"]).astype(int)
    # the one definition (sdebench.runs.rules, over typed records): unresolved episodes count at their cap,
    # errored ones not at all
    recs = results.records(out)
    out["errored"] = np.array([rules.is_error(r) for r in recs], dtype=bool)
    out["interventions_capped"] = np.array([rules.counted_interventions(r, cap) for r in recs], dtype=float)
    out["resolved_at"] = [rules.resolved_at(r) for r in recs]
    out["resolved_1"] = [rules.resolved_first(r) for r in recs]
    out["task_set"] = [rules.task_set(r) for r in recs]
    out["competency"] = [rules.competency(r) for r in recs]
    out["tier"] = [rules.tier(r) for r in recs]
    out["feedback_hidden"] = [rules.feedback_policy(r) for r in recs]
    # memory systems behind memtool are compared like deliveries: `memtool/kg` beside `memtool` (BM25)
    out["memory"] = [rules.memory_system(r) for r in recs]
    out["delivery"] = [rules.arm(d, m) for d, m in zip(out["delivery"], out["memory"], strict=True)]
    # tokens the delivery pushed into the prompt (inject); NaN where nothing was injected, so a cell's
    # mean covers the episodes that had an inject and other deliveries show no figure
    out["inject_tokens"] = [np.nan if r.delivery.inject_tokens is None else float(r.delivery.inject_tokens) for r in recs]
    out["memory_search_calls"] = [int(r.usage.tool_calls.get("memory_search", 0)) for r in recs]
    return out


def _ready(df: pd.DataFrame) -> pd.DataFrame:
    return df if "interventions_capped" in df and "errored" in df else prepare(df)


def errored(df: pd.DataFrame) -> pd.Series:
    """Whether each row of `df` (prepared or not) ended in error (`rules.is_error`)."""
    if "errored" in df:
        return df["errored"].astype(bool)
    return pd.Series([rules.is_error(r) for r in results.records(df)], index=df.index, dtype=bool)


METRICS = ["episodes", "errors", "resolved_1", "resolve_1", "resolve_1_lo", "resolve_1_hi", "resolved", "resolve_rate",
           "resolve_rate_lo", "resolve_rate_hi", "interventions_capped", "interventions_resolved", "cost_usd",
           "mean_cost_usd", "mean_tokens", "mean_prompt_tokens", "mean_completion_tokens", "mean_inject_tokens",
           "mean_turns", "mean_memory_search"]  # the engine's figures (sdebench.runs.summary.METRICS) the tables show
COUNTS = ("episodes", "errors", "resolved_1", "resolved")


def metrics(df: pd.DataFrame, by: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """Per group of `by`: valid episodes and errors, resolve@1 and resolve rate (intervals), interventions, cost, tokens (prompt, completion, injected), turns, memory_search calls.

    Everything but `errors` and the total `cost_usd` is over the episodes that did not end in error.
    The figures are the summary engine's (sdebench.runs.summary.figures); NaN where a group has no valid episode.
    """
    by = list(by)
    d = _ready(df)
    if d.empty:
        return pd.DataFrame(columns=[*by, *METRICS])
    rows = summary.summarize(results.records(d), by)
    out = pd.DataFrame([{**{k: r[k] for k in by}, **{m: r[m] for m in METRICS}} for r in rows], columns=[*by, *METRICS])
    for m in METRICS:
        out[m] = out[m].astype(int) if m in COUNTS else out[m].astype(float)
    return out


MEMORY_COLUMNS = ["episodes", "errors", "retrieved", "resolve@1 [95% CI]", "load s", "memory $", "agent $"]


def memory_systems(df: pd.DataFrame) -> pd.DataFrame:
    """Memory systems side by side (memtool; empty unless a system other than BM25 is in `df`): per task set,
    tier, agent, model, source and system, the episodes whose decisive item was retrieved, resolve@1, the
    mean load time, what the systems' own model calls cost and what the agent's cost (docs/memory.md)."""
    keys = ["task_set", "tier", "agent", "model", "source", "memory"]
    d = _ready(df)
    if d.empty or "memory" not in d or not (~d["memory"].isin(["none", "bm25"])).any():
        return pd.DataFrame(columns=[*keys, *MEMORY_COLUMNS])
    d = d[d["memory"] != "none"]
    rows = []
    for r in summary.summarize(results.records(d), keys):
        n = r["episodes"]
        rows.append({**{k: r[k] for k in keys}, "episodes": n, "errors": r["errors"],
                     "retrieved": rules.rate_ci(int(r["retrieved"]), int(n)), "resolve@1 [95% CI]": rules.rate_ci(r["resolved_1"], n),
                     "load s": "" if r["mean_memory_load_s"] is None else f"{r['mean_memory_load_s']:.2f}",
                     "memory $": f"{r['memory_cost_usd']:.4f}", "agent $": f"{r['cost_usd']:.4f}"})
    return ordered(pd.DataFrame(rows, columns=[*keys, *MEMORY_COLUMNS]))


def by_cell(df: pd.DataFrame) -> pd.DataFrame:
    """Metrics per task set, agent, model, source and delivery."""
    return ordered(metrics(df, CELL))


def headline(df: pd.DataFrame, by: tuple[str, ...] = CELL) -> pd.DataFrame:
    """The headline table per cell: valid episodes (and errors, when any cell has some), resolve@1 with its
    Wilson 95 % interval, then resolve@cap (with interval), interventions, and per-episode means of injected
    tokens, prompt and completion tokens and cost (per `by`, default the cell); blank where a cell has no valid episode."""
    t = ordered(metrics(df, list(by)))
    # One task set, feedback policy and tier (the usual case) need no column saying so; two or more are told apart.
    by = [c for c in by if not (c in ("task_set", "feedback_hidden", "tier") and t[c].nunique() <= 1)]
    # errored episodes are out of every rate: a column says how many, shown whenever a cell has any
    out = t[list(by) + ["episodes"] + (["errors"] if (t["errors"] > 0).any() else [])].copy()
    out["resolve@1 [95% CI]"] = [rules.rate_ci(int(k), int(n)) for k, n in zip(t["resolved_1"], t["episodes"], strict=True)]
    out["resolve@cap [95% CI]"] = [rules.rate_ci(int(k), int(n)) for k, n in zip(t["resolved"], t["episodes"], strict=True)]
    out["interventions"] = _fmt(t["interventions_capped"], "{:.2f}")
    # what the cell cost: memory pushed into the prompt, model tokens, money (means per episode)
    out["inject tokens"] = _fmt(t["mean_inject_tokens"], "{:.0f}")
    out["prompt tokens"] = _fmt(t["mean_prompt_tokens"], "{:.0f}")
    out["completion tokens"] = _fmt(t["mean_completion_tokens"], "{:.0f}")
    out["cost USD"] = _fmt(t["mean_cost_usd"], "{:.4f}")
    return out.reset_index(drop=True)


def _fmt(values: pd.Series, fmt: str) -> list[str]:
    """`values` formatted, blank where missing (nothing injected, or no valid episode)."""
    return ["" if pd.isna(v) else fmt.format(v) for v in values]


GAPS_NEED_ORACLE = ("No gaps: every ablation gap ({}) pairs a delivery with `delivery=oracle` (or oracle with squashed) "
                    "on the same tasks and seeds, so it needs `delivery=oracle` runs beside the others "
                    "(e.g. `experiment=ablation`); deliveries here: {}.")


def gaps_note(df: pd.DataFrame) -> str:
    """Why the gap table is empty (it needs delivery=oracle runs), or '' when it has rows."""
    d = _ready(df)
    if len(gaps(d, n_boot=1)):
        return ""
    present = sorted(set(d["delivery"]), key=lambda x: (DELIVERIES.index(x) if x in DELIVERIES else 99, x)) if len(d) else []
    return GAPS_NEED_ORACLE.format(", ".join(f"{a} - {b}" for a, b in GAPS), ", ".join(present) or "none")


def by_competency(df: pd.DataFrame) -> pd.DataFrame:
    """Metrics per task set, tier, competency, agent, model and delivery (recall first, then each hard competency)."""
    return ordered(metrics(df, ["task_set", "feedback_hidden", "tier", "competency", "agent", "model", "delivery"]))


def by_bottleneck(df: pd.DataFrame) -> pd.DataFrame:
    """Metrics per task set, tier, agent, model, bottleneck and delivery."""
    return ordered(metrics(df, ["task_set", "feedback_hidden", "tier", "agent", "model", "bottleneck", "delivery"]))


def by_family(df: pd.DataFrame) -> pd.DataFrame:
    """Metrics per task set, agent, model, family, its competency and delivery."""
    return ordered(metrics(df, ["task_set", "feedback_hidden", "agent", "model", "family", "competency", "delivery"]))


def _order(value: str, order: tuple[str, ...]) -> tuple[int, str]:
    return (order.index(value) if value in order else len(order), value)


def _rank(values: pd.Series, order: tuple[str, ...]) -> pd.Series:
    return values.map(lambda v: order.index(v) if v in order else len(order))


def ordered(t: pd.DataFrame) -> pd.DataFrame:
    """Rows in the canonical source and delivery order (then by name)."""
    keys, ranks = [], {}
    for col in t.columns:
        if col in ("task_set", "feedback_hidden", "tier", "competency", "agent", "model", "bottleneck", "family",
                   "source", "delivery"):
            keys.append(col)
    t = t.copy()
    for col, order in (("tier", TIERS), ("competency", COMPETENCIES), ("source", SOURCES), ("delivery", DELIVERIES)):
        if col in t:
            ranks[col] = _rank(t[col], order)
    for col, r in ranks.items():
        t[f"_{col}_rank"] = r
    sort_by = [f"_{c}_rank" if c in ranks else c for c in keys]
    t = t.sort_values([*sort_by, *keys], kind="mergesort")
    return t.drop(columns=[f"_{c}_rank" for c in ranks]).reset_index(drop=True)


def resolve_table(df: pd.DataFrame, agent: str, model: str | None = None, value: str = "resolve_rate") -> pd.DataFrame:
    """A source x delivery matrix of `value` for one agent (and model): rows sources, columns deliveries."""
    t = by_cell(df)
    t = t[(t["agent"] == agent) & ((t["model"] == model) if model is not None else True)]
    m = t.pivot_table(index="source", columns="delivery", values=value, aggfunc="mean")
    rows = sorted(m.index, key=lambda s: (SOURCES.index(s) if s in SOURCES else 99, s))
    cols = sorted(m.columns, key=lambda c: (DELIVERIES.index(c) if c in DELIVERIES else 99, c))
    return m.loc[rows, cols]


def bootstrap_gap(a: pd.DataFrame, b: pd.DataFrame, metric: str, n_boot: int, rng: np.random.Generator) -> dict[str, Any]:
    """The gap mean(a) - mean(b) of `metric` over (task, seed) units present in both, with a two-level bootstrap.

    Resampling: tasks with replacement, then seeds with replacement within each drawn task (the
    paired difference of a unit is kept together). The interval is the 2.5/97.5 percentile.
    Episodes that ended in error are left out; `errors` counts the units present in both that
    this dropped (a side had only errored episodes).
    """
    unit = ["task_id", "seed"]
    both = len(a[unit].drop_duplicates().merge(b[unit].drop_duplicates()))
    a, b = a[~errored(a)], b[~errored(b)]
    ka = a.groupby(unit)[metric].mean()
    kb = b.groupby(unit)[metric].mean()
    diff = (ka - kb).dropna()
    dropped = both - len(a[unit].drop_duplicates().merge(b[unit].drop_duplicates()))
    if diff.empty:
        return {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "tasks": 0, "seeds": 0, "units": 0,
                "errors": dropped}
    mat = diff.unstack("seed")  # tasks x seeds; NaN where a task lacks a seed
    vals = mat.to_numpy(dtype=float)
    n_t, n_s = vals.shape
    ti = rng.integers(0, n_t, size=(n_boot, n_t))
    si = rng.integers(0, n_s, size=(n_boot, n_t, n_s))
    with warnings.catch_warnings():
        # a draw of missing units only (holes: an unrun seed, a dropped error) is NaN; nanpercentile skips it
        warnings.simplefilter("ignore", RuntimeWarning)
        draws = np.nanmean(vals[ti[:, :, None], si].reshape(n_boot, -1), axis=1)
    lo, hi = np.nanpercentile(draws, [2.5, 97.5])
    return {"estimate": float(diff.mean()), "ci_low": float(lo), "ci_high": float(hi),
            "tasks": int(n_t), "seeds": int(n_s), "units": int(len(diff)), "errors": dropped}


def gaps(df: pd.DataFrame, metric: str = "resolved", n_boot: int = N_BOOT, seed: int = 0,
         pairs: tuple[tuple[str, str], ...] = GAPS) -> pd.DataFrame:
    """Headline ablation gaps per task set, agent, model and source (e.g. oracle - squashed) of `metric`, with 95% bootstrap intervals.

    `metric` is a per-episode column: `resolved` (gap in resolve rate) or `interventions_capped`.
    The generator is seeded with `seed`; `n_boot` resamples per gap (reported in column n_boot).
    Units where a side ended in error are dropped (column `errors`, see `bootstrap_gap`).
    """
    d = _ready(df).copy()
    d[metric] = d[metric].astype(float)
    rng = np.random.default_rng(seed)
    rows = []
    for (tset, policy, tier, agent, model, source), sub in sorted(
            d.groupby(["task_set", "feedback_hidden", "tier", "agent", "model", "source"]), key=lambda kv: (
                kv[0][0], kv[0][1], _order(kv[0][2], TIERS), *kv[0][3:5], _order(kv[0][5], SOURCES))):
        for hi_d, lo_d in pairs:
            a, b = sub[sub["delivery"] == hi_d], sub[sub["delivery"] == lo_d]
            if a.empty or b.empty:
                continue
            rows.append({"task_set": tset, "feedback_hidden": policy, "tier": tier, "agent": agent, "model": model,
                         "source": source, "gap": f"{hi_d} - {lo_d}",
                         "metric": metric, **bootstrap_gap(a, b, metric, n_boot, rng), "n_boot": n_boot})
    cols = ["task_set", "feedback_hidden", "tier", "agent", "model", "source", "gap", "metric", "estimate", "ci_low",
            "ci_high", "tasks", "seeds", "units", "errors", "n_boot"]
    return pd.DataFrame(rows, columns=cols)


UNIT = ("task_id", "agent", "model", "seed")


def paired_comparisons(df: pd.DataFrame, by: tuple[str, ...] = ("task_set", "feedback_hidden", "tier", "agent", "model",
                                                                  "source"),
                       n_boot: int = N_BOOT,
                       seed: int = 0, pairs: tuple[tuple[str, str], ...] | None = None) -> pd.DataFrame:
    """Deliveries compared on the same (task, agent, model, seed) units: resolve@1 of each, the difference,
    the discordant counts, the exact McNemar p-value and a paired bootstrap 95 % interval over tasks.

    `pairs` defaults to every two deliveries present in a group (canonical order, a before b, but
    oriented as in GAPS where the pair is one, e.g. oracle - squashed: the difference is a - b). The bootstrap resamples tasks with replacement (`n_boot` draws, numpy
    `default_rng(seed)`). Episodes that ended in error are left out: a unit run under both deliveries
    whose a or b side has only errored episodes is dropped (column `errors` counts them; a pair with
    no unit left shows NaN statistics). A unit run more than once under a delivery keeps its first
    valid record by `key` (column `duplicates` counts the other valid ones).
    """
    cols = [*by, "comparison", "a", "b", "units", "tasks", "resolve_1_a", "resolve_1_b", "difference", "both", "only_a",
            "only_b", "neither", "mcnemar_p", "ci_low", "ci_high", "n_boot", "duplicates", "errors"]
    d = _ready(df)
    if d.empty:
        return pd.DataFrame(columns=cols)
    d = d.sort_values("key", kind="mergesort") if "key" in d else d
    rows = []
    for group, sub in d.groupby(list(by), sort=True):
        group = group if isinstance(group, tuple) else (group,)
        present = sorted(set(sub["delivery"]), key=lambda x: (DELIVERIES.index(x) if x in DELIVERIES else 99, x))
        # every two deliveries, oriented as in GAPS where the pair is one (oracle - squashed, not its negative)
        todo = pairs if pairs is not None else [(b, a) if (b, a) in GAPS else (a, b)
                                                for i, a in enumerate(present) for b in present[i + 1:]]
        for a, b in todo:
            da, db = sub[sub["delivery"] == a], sub[sub["delivery"] == b]
            if da.empty or db.empty:
                continue
            ran_both = len(da[list(UNIT)].drop_duplicates().merge(db[list(UNIT)].drop_duplicates()))
            if not ran_both:
                continue
            va, vb = da[~da["errored"]], db[~db["errored"]]
            ua, ub = va.drop_duplicates(list(UNIT)), vb.drop_duplicates(list(UNIT))
            m = ua[[*UNIT, "resolved_1"]].merge(ub[[*UNIT, "resolved_1"]], on=list(UNIT), suffixes=("_a", "_b"))
            rows.append({**dict(zip(by, group, strict=True)), "comparison": f"{a} - {b}", "a": a, "b": b,
                         **_paired_stats(m, n_boot, seed), "n_boot": n_boot,
                         "duplicates": int(len(va) - len(ua) + len(vb) - len(ub)), "errors": ran_both - len(m)})
    return ordered(pd.DataFrame(rows, columns=cols))  # recall before hard, sources in order; pairs as listed


def _paired_stats(m: pd.DataFrame, n_boot: int, seed: int) -> dict[str, Any]:
    """The statistics of paired units `m` (columns task_id, resolved_1_a, resolved_1_b); NaN without units."""
    if m.empty:
        nan = float("nan")
        return {"units": 0, "tasks": 0, "resolve_1_a": nan, "resolve_1_b": nan, "difference": nan, "both": 0,
                "only_a": 0, "only_b": 0, "neither": 0, "mcnemar_p": nan, "ci_low": nan, "ci_high": nan}
    ra, rb = m["resolved_1_a"].astype(bool), m["resolved_1_b"].astype(bool)
    only_a, only_b = int((ra & ~rb).sum()), int((~ra & rb).sum())
    diff = ra.astype(int) - rb.astype(int)
    lo, hi = paired_stats.bootstrap_diff(list(m["task_id"]), list(diff), n_boot, seed)
    return {"units": len(m), "tasks": int(m["task_id"].nunique()), "resolve_1_a": float(ra.mean()),
            "resolve_1_b": float(rb.mean()), "difference": float(diff.mean()), "both": int((ra & rb).sum()),
            "only_a": only_a, "only_b": only_b, "neither": int((~ra & ~rb).sum()),
            "mcnemar_p": paired_stats.mcnemar_exact(only_a, only_b), "ci_low": lo, "ci_high": hi}


def tasks_needed_table(alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Paired tasks needed per baseline resolve@1 (rows) and effect (columns), McNemar at `alpha`, `power`."""
    return pd.DataFrame(paired_stats.sample_size_rows(alpha=alpha, power=power))


def intervention_distribution(df: pd.DataFrame) -> pd.DataFrame:
    """Episodes per agent, model, delivery, intervention count and outcome (resolved or not); errored ones have no outcome and are left out."""
    d = _ready(df)
    d = d[~d["errored"]]
    cols = ["agent", "model", "delivery", "interventions", "resolved"]
    if d.empty:
        return pd.DataFrame(columns=[*cols, "episodes"])
    t = d.groupby(cols).size().rename("episodes").reset_index()
    return ordered(t).sort_values(["agent", "model"], kind="mergesort").reset_index(drop=True)


def _valid(d: pd.DataFrame, cap: int) -> np.ndarray:
    """Whether each reference-agent episode behaved as required (see `validity`)."""
    caps = d["max_interventions"].fillna(cap).astype(int) if "max_interventions" in d else cap
    return np.select(
        [d["agent"] == "oracle", d["agent"] == "conventional", d["agent"] == "noop"],
        [d["resolved"] & (d["interventions"] == 0),
         ~d["resolved"] & (d["interventions"] == caps) & (d["stop_reason"] == "max_interventions"),
         ~d["resolved"]],
        default=False,
    ).astype(bool)


def validity(df: pd.DataFrame, cap: int = DEFAULT_CAP) -> pd.DataFrame:
    """Per reference agent and cell: how many episodes behaved as the benchmark requires.

    oracle: resolved with 0 interventions; conventional: unresolved after exactly the cap of
    interventions (it passes the visible tests, fails the hidden ones); noop: never resolved.
    `episodes` and `valid` count the episodes that did not end in error, `errors` the others (no
    outcome to judge); `all_valid` says every counted episode behaved.
    """
    d = _ready(df)
    d = d[d["agent"].isin(["oracle", "conventional", "noop"])].copy()
    d["counted"] = ~d["errored"]
    d["valid"] = _valid(d, cap) & d["counted"]
    g = d.groupby(["agent", "tier", "source", "delivery"])
    t = pd.DataFrame({"episodes": g["counted"].sum().astype(int), "errors": g["errored"].sum().astype(int),
                      "valid": g["valid"].sum().astype(int)}).reset_index()
    t["all_valid"] = t["valid"] == t["episodes"]
    return ordered(t)


def invalid_episodes(df: pd.DataFrame, cap: int = DEFAULT_CAP) -> pd.DataFrame:
    """The reference-agent episodes that broke the expectation of `validity` (task, cell, outcome); errored ones are not judged."""
    d = _ready(df)
    d = d[d["agent"].isin(["oracle", "conventional", "noop"]) & ~d["errored"]]
    bad = d[~_valid(d, cap)]
    cols = ["agent", "task_id", "source", "delivery", "resolved", "interventions", "stop_reason"]
    return bad[cols].sort_values(cols[:4], kind="mergesort").reset_index(drop=True)
