"""FINDINGS.md from committed results: the headline table (resolve@1, resolve@cap and interventions
per cell with Wilson 95 % intervals), the same per tier and competency, validity of the reference
agents per cell, the naive readers (when the results hold them), sweep time and cost, how many
tasks an effect needs, and the LLM section (filled from an LLM sweep when one is given, else the
command that fills it).

Everything here is a pure function of the files read, so the same results give the same bytes:
no clock, no absolute paths, fixed ordering and number formats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from sdebench.analysis import paired as paired_stats
from sdebench.analysis import tables as analysis
from sdebench.runs import results

LLM_RESULTS = "experiments/llm"
LLM_SWEEP = ("python -m sdebench.run -m experiment=ablation agent=llm model=MODEL "
             f"results_dir={LLM_RESULTS} hydra/launcher=parallel")
LLM_FILL = f"python -m sdebench.report --findings --llm {LLM_RESULTS}"
REFERENCE_AGENTS = ("oracle", "conventional", "noop")
EXPECT = {
    "oracle": "resolves every task at the first submit (0 interventions)",
    "conventional": "passes the visible tests but fails the hidden ones: unresolved after exactly the cap of interventions",
    "noop": "never resolves",
}


def md_table(df: pd.DataFrame, floatfmt: str = "{:.2f}") -> str:
    """`df` as a markdown table (index dropped)."""
    if df.empty:
        return "_no rows_\n"
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else floatfmt.format(v)
        return str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(str(c) for c in df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


ROOT = Path(__file__).resolve().parents[2]


def _rel(path: Path) -> str:
    """`path` relative to the repository root (whatever the current dir), else its name."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return p.name


HEADLINE_NOTE = ("resolve@1 (resolved at the first submit, before any feedback) is the headline memory effect: "
                 "feedback lets an agent search, so resolve@cap mixes memory with search. Interventions count an "
                 "unresolved episode at the cap. Intervals are Wilson 95 %.")
ERRORS_NOTE = ("Episodes that ended in error (an infrastructure or agent-run failure) have no outcome: `errors` "
               "counts them and every rate, interval and mean is over the other `episodes`.")


def headline_section(df: pd.DataFrame, title: str, by: tuple[str, ...] = analysis.CELL) -> list[str]:
    """resolve@1, resolve@cap and interventions side by side per group of `by`, with intervals (resolve@1 first)."""
    t = analysis.headline(df, by)
    # blank: a cell with no valid episode
    if t["cost USD"].isin(["0.0000", ""]).all() and t["prompt tokens"].isin(["0", ""]).all():
        t = t.drop(columns=["prompt tokens", "completion tokens", "cost USD"])  # no model was called
    if (t["inject tokens"] == "").all():
        t = t.drop(columns=["inject tokens"])
    note = HEADLINE_NOTE + (" " + ERRORS_NOTE if "errors" in t else "")
    return [title, "", note + "\n", md_table(t)]


def memory_section(df: pd.DataFrame) -> list[str]:
    """Memory systems side by side, when the records hold any other than BM25 (docs/memory.md)."""
    t = analysis.memory_systems(df)
    if not len(t):
        return []
    return ["## Memory systems behind memtool", "",
            "retrieved: episodes whose decisive memory item was among the items an answer showed; load s: starting "
            "the system and loading the corpus; memory $: the system's own model calls, apart from the agent's. "
            "The paired comparisons compare `memtool/<system>` with `memtool` (BM25) on the same tasks.", "",
            md_table(t), ""]


def power_section() -> list[str]:
    """How many paired tasks a resolve@1 difference needs."""
    return ["## How many tasks an effect needs", "", paired_stats.FORMULA[0].upper() + paired_stats.FORMULA[1:] + ".\n",
            md_table(analysis.tasks_needed_table())]


def validity_section(df: pd.DataFrame) -> list[str]:
    """The reference agents' validity per source x delivery cell."""
    v = analysis.validity(df)
    out = ["## What the reference agents show about the benchmark", ""]
    tasks = sorted(df["task_id"].unique())
    errors = int(analysis.errored(df).sum())
    out.append(f"{len(df)} episodes over {len(tasks)} tasks ({', '.join(tasks)}); "
               "a cell counts the episodes that behaved as required"
               + (f" (`!n`: n more ended in error, {errors} in all, and are not judged)" if errors else "") + ".\n")
    for agent in REFERENCE_AGENTS:
        sub = v[v["agent"] == agent]
        if sub.empty:
            continue
        ok, n, e = int(sub["valid"].sum()), int(sub["episodes"].sum()), int(sub["errors"].sum())
        verdict = "holds in every cell" if ok == n else f"FAILS in {int((~sub['all_valid']).sum())} cells"
        verdict += f"; {e} episodes ended in error and are not judged" if e else ""
        out.append(f"- **{agent}** {EXPECT[agent]}: {ok}/{n} episodes; {verdict}.")
    out.append("")
    tiers = [t for t in analysis.TIERS if t in set(v["tier"])]
    for agent in REFERENCE_AGENTS:
        for tier in tiers:
            sub = v[(v["agent"] == agent) & (v["tier"] == tier)]
            if sub.empty:
                continue
            sub = sub.assign(cell=[f"{a}/{b}" + (f" !{e}" if e else "")
                                   for a, b, e in zip(sub["valid"], sub["episodes"], sub["errors"], strict=True)])
            m = sub.pivot(index="source", columns="delivery", values="cell")
            rows = sorted(m.index, key=lambda s: analysis.SOURCES.index(s) if s in analysis.SOURCES else 99)
            cols = sorted(m.columns, key=lambda c: analysis.DELIVERIES.index(c) if c in analysis.DELIVERIES else 99)
            m = m.loc[rows, cols].fillna("").reset_index()
            label = f"{agent}, {tier} tier" if len(tiers) > 1 else agent
            out += [f"### {label}: valid/episodes", "", md_table(m)]
    bad = analysis.invalid_episodes(df)
    out += ["### Episodes that broke the expectation", "", md_table(bad) if len(bad) else "None.\n"]
    return out


TIER_NOTE = ("The tier of a task is `recall` when one memory item states its fact and `hard` when the fact must "
             "be worked out of memory (conflict, synthesis, scope, validity, implicit; docs/hard.md). Read the tiers "
             "apart: recall measures whether the fact reaches the agent, hard whether memory is used well.")


def tier_section(df: pd.DataFrame) -> list[str]:
    """resolve@1 (and resolve@cap) per tier, competency and agent (rows) and delivery (columns)."""
    present = [t for t in analysis.TIERS if t in set(df["tier"])]
    missing = [t for t in analysis.TIERS if t not in present]
    note = TIER_NOTE + (f" These results hold no {' or '.join(missing)}-tier episode." if missing else "")
    t = analysis.by_competency(df)
    t = t.assign(cell=[f"{int(a)}/{int(n)} ({int(b)}/{int(n)})" + (f" !{int(e)}" if e else "") for a, b, n, e in
                       zip(t["resolved_1"], t["resolved"], t["episodes"], t["errors"], strict=True)])
    keys = ["tier", "competency", "agent", "model"]
    m = t.pivot_table(index=keys, columns="delivery", values="cell", aggfunc="first", sort=False)
    cols = sorted(m.columns, key=lambda c: analysis.DELIVERIES.index(c) if c in analysis.DELIVERIES else 99)
    m = m[cols].fillna("").reset_index()
    return ["## By tier and competency", "", note + " A cell is resolve@1 (resolve@cap) over the episodes that did "
            "not end in error (`!n`: n more did).\n", md_table(m)]


READERS = results.READERS


def readers_section(df: pd.DataFrame) -> list[str]:
    """The naive readers' resolve@1 per tier, delivery and reader, when the results hold reader episodes."""
    t = pd.DataFrame(results.reader_calibration(results.records(df)))  # the summary engine's figures
    if t.empty:
        return []
    t["resolve@1"] = [f"{int(k)}/{int(n)} ({k / n:.0%})" for k, n in zip(t["resolved_1"], t["episodes"], strict=True)]
    m = t.pivot_table(index=["tier", "agent"], columns="delivery", values="resolve@1", aggfunc="first")
    cols = sorted(m.columns, key=lambda c: analysis.DELIVERIES.index(c) if c in analysis.DELIVERIES else 99)
    m = m[cols].fillna("").reset_index()
    m = m.sort_values(["tier", "agent"], key=lambda s: s.map(lambda v: (analysis.TIERS + READERS).index(v)
                                                             if v in analysis.TIERS + READERS else 99))
    return ["## Naive memory readers", "",
            "resolve@1 of `reader-top1`, `reader-latest` and `reader-majority` over the tasks whose fact lives in "
            "memory (H, K, F, X): on the recall tier the calibration (they should often succeed), on the hard tier "
            "generation rule 8 (they must fail but under oracle; docs/hard.md).\n", md_table(m)]


def time_section(df: pd.DataFrame, sweep: dict[str, Any]) -> list[str]:
    """Sweep wall time, per-episode times and cost (over every episode, errored ones included: that time and money were spent)."""
    out = ["## Sweep time and cost", ""]
    if sweep:
        wall = float(sweep["wall_s"])
        out.append(f"The sweep ran `{sweep['command']}` ({sweep.get('sandbox', '?')} sandbox, "
                   f"{sweep.get('launcher', '?')} launcher) in {wall:.0f} s of wall time: "
                   f"{len(df)} episodes, {60 * len(df) / wall:.1f} episodes per minute.\n")
    g = df.groupby("agent")
    t = pd.DataFrame({
        "episodes": g.size(),
        "mean_wall_s": g["wall_s"].mean(),
        "mean_grading_s": g["grading_s"].mean() if "grading_s" in df else float("nan"),
        "mean_turns": g["turns"].mean(),
        "mean_attempts": g["attempts"].apply(lambda s: sum(len(a or []) for a in s) / len(s)) if "attempts" in df else float("nan"),
        "cost_usd": g["cost_usd"].sum(),
    }).reset_index()
    out += [md_table(t), f"Episode wall time summed over the sweep: {df['wall_s'].sum():.0f} s; "
            f"total model cost: {df['cost_usd'].sum():.2f} USD (reference agents call no model).\n"]
    return out


def llm_section(llm: Path | None) -> list[str]:
    """The LLM results, or the exact commands that produce and fill them."""
    out = ["## LLM agents", ""]
    df = results.load(llm) if llm is not None and Path(llm).exists() else pd.DataFrame()
    if not df.empty:
        df = analysis.prepare(analysis.split_streams(df)[0])  # stream records are not ablation cells
        df = df[~df["agent"].isin(REFERENCE_AGENTS)]
    if df.empty:
        out += ["Not run: no LLM endpoint was reachable where these results were produced. "
                "This section is filled from a real sweep by:", "", "```bash", LLM_SWEEP, LLM_FILL, "```", ""]
        return out
    errors = int(analysis.errored(df).sum())
    out.append(f"From `{_rel(llm)}`: {len(df)} episodes" + (f", {errors} of them ended in error" if errors else "") + ".\n")
    gaps = analysis.gaps(df)
    note = analysis.gaps_note(df)
    pairs = analysis.paired_comparisons(df).drop(columns=["a", "b", "n_boot", "duplicates"])
    out += [*headline_section(df, "### resolve@1, resolve@cap and interventions per cell"),
            f"### Ablation gaps in resolve rate (95% bootstrap CI, {analysis.N_BOOT} resamples, seed 0)", "",
            note + "\n" if note else md_table(gaps.drop(columns=["metric", "n_boot"])),
            "### Paired comparisons on the same tasks (resolve@1 a - b; exact McNemar p; paired bootstrap 95% CI "
            f"over tasks, {analysis.N_BOOT} resamples, seed 0)", "", md_table(pairs, floatfmt="{:.3f}")]
    return out


def render(reference: Path, llm: Path | None = None) -> str:
    """The whole FINDINGS.md text from the committed reference sweep dir (and an LLM sweep dir, if any)."""
    reference = Path(reference)
    if not reference.exists():
        raise FileNotFoundError(f"no such reference results dir: {reference}")
    df = results.load(reference)
    if df.empty:
        raise ValueError(f"no episode records under {reference}")
    df = analysis.prepare(analysis.split_streams(df)[0])
    meta_file = reference / "sweep.json"
    sweep = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    head = ["# Findings", "",
            "_Written by `python -m sdebench.report --findings` from the committed results under "
            f"`{_rel(reference)}/`; every number below is computed from them. Do not edit by hand._", ""]
    top = headline_section(df, "## Headline: resolve@1, resolve@cap and interventions per agent and delivery "
                                "(over every source)", ("task_set", "feedback_hidden", "agent", "model", "delivery"))
    return "\n".join([*head, *top, *memory_section(df), *tier_section(df), *validity_section(df), *readers_section(df),
                      *time_section(df, sweep), *power_section(), *llm_section(llm)]).rstrip() + "\n"
