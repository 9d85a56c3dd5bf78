"""The report's first screen: per agent and model, a source x delivery matrix of resolve@1 with its
Wilson 95 % interval and n, then the same shape for the mean cost per episode.

The figures are `tables.by_cell`'s, formatted by `rules.rate_ci` (the one interval definition), so
the matrix and every other table agree. Task set, feedback policy and tier are never pooled: a
group per value when the frame holds more than one (both tiers: a recall and a hard matrix per agent).
"""

from __future__ import annotations

import pandas as pd

from sdebench.analysis import tables as analysis
from sdebench.analysis.htmltable import esc
from sdebench.runs.rules import rate_ci

SPLIT = ("task_set", "feedback_hidden", "tier")  # a matrix per value, and named only when there are several
GROUP = (*SPLIT, "agent", "model")
TITLE = "resolve@1 by source and delivery, then mean cost per episode"


def _order(values, canonical: tuple[str, ...]) -> list[str]:
    return sorted(set(values), key=lambda v: (canonical.index(v) if v in canonical else len(canonical), v))


def _grid(sub: pd.DataFrame, corner: str, cell) -> str:
    """A source x delivery table of `sub` (by_cell rows of one group); `cell(row)` gives a cell's td."""
    sources = _order(sub["source"], analysis.SOURCES)
    deliveries = _order(sub["delivery"], analysis.DELIVERIES)
    rows = {(r["source"], r["delivery"]): r for r in sub.to_dict("records")}
    head = f"<tr><th>{esc(corner)}</th>" + "".join(f"<th>{esc(d)}</th>" for d in deliveries) + "</tr>"
    body = "".join(f"<tr><th>{esc(s)}</th>" + "".join(cell(rows[(s, d)]) if (s, d) in rows else "<td></td>"
                                                      for d in deliveries) + "</tr>" for s in sources)
    return f'<div class="scroll"><table class="matrix">{head}{body}</table></div>'


def _errors(row: dict) -> str:
    n = int(row["errors"])
    return f' <span class="err">+{n} error{"s" if n > 1 else ""}</span>' if n else ""


def resolve_cell(row: dict) -> str:
    """One resolve@1 cell: `k/n = p [lo, hi]` (shaded by p), and the errored episodes left out of it."""
    k, n = int(row["resolved_1"]), int(row["episodes"])
    main, _, ci = rate_ci(k, n).partition(" [")
    shade = f' style="background:rgba(60,150,70,{0.06 + 0.5 * k / n:.2f})"' if n else ""
    ci_html = f' <span class="ci">[{esc(ci)}</span>' if ci else ""
    return f"<td{shade}>{esc(main)}{ci_html}{_errors(row)}</td>"


def cost_cell(row: dict) -> str:
    """One mean-cost cell: USD per episode that did not end in error."""
    v = row["mean_cost_usd"]
    return f"<td>{'' if pd.isna(v) else esc(f'${v:.4f}')}{_errors(row)}</td>"


def section(df: pd.DataFrame) -> str:
    """The matrices of a prepared static frame as HTML, headed by an <h2>."""
    t = analysis.by_cell(df)
    split = [c for c in SPLIT if t[c].nunique() > 1]
    same = [f"{c}={t[c].iloc[0]}" for c in SPLIT if c not in split and len(t)]
    out = [f'<h2 id="matrix">{esc(TITLE)}</h2>',
           "<p class=\"note\">resolve@1: resolved at the first submit, before any feedback (the memory effect), as "
           "<code>k/n = p [Wilson 95% interval]</code> over the episodes that did not end in error (errored ones "
           "are counted beside them, never as failures). Cost: mean USD per such episode. "
           + esc(f"Every cell: {', '.join(same)}.") + "</p>"]
    for key, sub in t.groupby(list(GROUP), sort=False):  # by_cell's order: recall before hard, then by name
        labels = dict(zip(GROUP, key, strict=True))
        heading = f"agent={labels['agent']} model={labels['model']}" + "".join(f" {c}={labels[c]}" for c in split)
        costs = sub["mean_cost_usd"].dropna()
        if costs.nunique() == 1:  # one figure says it (reference agents: 0), beside the heading
            note = f' <span class="note">mean cost per episode: ${costs.iloc[0]:.4f} in every cell</span>'
            out.append(f"<h3>{esc(heading)}{note}</h3>{_grid(sub, 'resolve@1', resolve_cell)}")
        else:
            out.append(f"<h3>{esc(heading)}</h3><div class=\"pair\">{_grid(sub, 'resolve@1', resolve_cell)}"
                       f"{_grid(sub, 'mean cost', cost_cell)}</div>")
    return "\n".join(out)
