"""PNG plots of a sweep: resolve-rate heatmap (source x delivery), intervention histograms per
delivery, cost against resolve rate per delivery.

Each function draws with matplotlib's Agg backend, writes one PNG and returns the table it drew.
The PNG carries that table as JSON in its `Description` text chunk (and, for the heatmap, the pixel
where each cell's colour can be sampled), so a reader can check the picture against its data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from sdebench.analysis import tables as analysis

CMAP = "viridis"
DPI = 100


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path, meta: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png",
                metadata={"Description": json.dumps(meta, sort_keys=True, default=float), "Software": None})
    _pyplot().close(fig)
    return path


def png_metadata(path: Path) -> dict[str, Any]:
    """The JSON a plot stored in its PNG `Description` chunk."""
    from PIL import Image

    with Image.open(path) as im:
        return json.loads(im.info["Description"])


def resolve_heatmap(df: pd.DataFrame, path: Path, agent: str, model: str | None = None) -> pd.DataFrame:
    """Write a source x delivery heatmap of `agent`'s resolve rate (0..1) to `path`; return the matrix."""
    plt = _pyplot()
    m = analysis.resolve_table(df, agent, model)
    fig, ax = plt.subplots(figsize=(1.2 * max(len(m.columns), 1) + 2, 0.6 * max(len(m.index), 1) + 1.6), dpi=DPI)
    im = ax.imshow(m.to_numpy(dtype=float), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(m.columns)), list(m.columns))
    ax.set_yticks(range(len(m.index)), list(m.index))
    ax.set_xlabel("delivery")
    ax.set_ylabel("source")
    ax.set_title(f"resolve rate: agent={agent}" + (f" model={model}" if model else ""))
    for i in range(len(m.index)):
        for j in range(len(m.columns)):
            v = m.iat[i, j]
            if pd.notna(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="w" if v < 0.6 else "k", fontsize=9)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.canvas.draw()
    height = fig.canvas.get_width_height()[1]
    cells = []
    for i, s in enumerate(m.index):
        for j, d in enumerate(m.columns):
            # sample away from the centre, where the value label is drawn
            x, y = ax.transData.transform((j - 0.3, i - 0.3))
            v = m.iat[i, j]
            cells.append({"source": s, "delivery": d, "value": None if pd.isna(v) else float(v),
                          "px": [int(round(x)), int(round(height - y))]})
    _save(fig, path, {"kind": "resolve_heatmap", "agent": agent, "model": model, "cmap": CMAP, "cells": cells})
    return m


def intervention_histograms(df: pd.DataFrame, path: Path, agent: str, model: str | None = None,
                            cap: int = analysis.DEFAULT_CAP) -> pd.DataFrame:
    """Write one histogram of intervention counts per delivery (resolved and unresolved stacked); return the counts."""
    plt = _pyplot()
    d = analysis.intervention_distribution(df)
    d = d[(d["agent"] == agent) & ((d["model"] == model) if model is not None else True)]
    deliveries = [x for x in analysis.DELIVERIES if x in set(d["delivery"])] + sorted(
        set(d["delivery"]) - set(analysis.DELIVERIES))
    top = max([cap, *d["interventions"].tolist()]) if len(d) else cap
    xs = list(range(top + 1))
    fig, axes = plt.subplots(1, max(len(deliveries), 1), figsize=(3 * max(len(deliveries), 1), 3), dpi=DPI,
                             sharey=True, squeeze=False)
    counts = []
    for ax, dl in zip(axes[0], deliveries, strict=False):
        sub = d[d["delivery"] == dl]
        ok = [int(sub[(sub["interventions"] == x) & sub["resolved"]]["episodes"].sum()) for x in xs]
        bad = [int(sub[(sub["interventions"] == x) & ~sub["resolved"]]["episodes"].sum()) for x in xs]
        ax.bar(xs, ok, color="tab:green", label="resolved")
        ax.bar(xs, bad, bottom=ok, color="tab:red", label="unresolved")
        ax.set_title(dl)
        ax.set_xlabel("interventions")
        ax.set_xticks(xs)
        counts += [{"delivery": dl, "interventions": x, "resolved": r, "unresolved": u}
                   for x, r, u in zip(xs, ok, bad, strict=True)]
    axes[0][0].set_ylabel("episodes")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"interventions: agent={agent}" + (f" model={model}" if model else ""))
    fig.tight_layout()
    table = pd.DataFrame(counts, columns=["delivery", "interventions", "resolved", "unresolved"])
    _save(fig, path, {"kind": "intervention_histograms", "agent": agent, "model": model,
                      "counts": table.to_dict(orient="records")})
    return table


def cost_vs_resolve(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Write a scatter of mean cost per episode against resolve rate, one point per agent/model and delivery; return the points."""
    plt = _pyplot()
    t = analysis.ordered(analysis.metrics(df, ["agent", "model", "delivery"]))
    fig, ax = plt.subplots(figsize=(6, 4), dpi=DPI)
    markers = "osD^v<>p*h"
    for k, ((agent, model), sub) in enumerate(t.groupby(["agent", "model"], sort=True)):
        ax.scatter(sub["mean_cost_usd"], sub["resolve_rate"], marker=markers[k % len(markers)], s=50,
                   label=f"{agent}/{model}")
        for _, r in sub.iterrows():
            ax.annotate(r["delivery"], (r["mean_cost_usd"], r["resolve_rate"]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("mean cost per episode (USD)")
    ax.set_ylabel("resolve rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("cost against resolve rate per delivery")
    if len(t):
        ax.legend(fontsize=7)
    fig.tight_layout()
    points = t[["agent", "model", "delivery", "mean_cost_usd", "resolve_rate", "episodes"]].reset_index(drop=True)
    _save(fig, path, {"kind": "cost_vs_resolve", "points": points.to_dict(orient="records")})
    return points


def write_all(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write every plot for every agent/model of `df` into `out_dir`; return the PNG paths."""
    out_dir = Path(out_dir)
    paths = []
    d = analysis.prepare(df)
    for agent, model in sorted({(a, m) for a, m in zip(d["agent"], d["model"], strict=True)}):
        stem = f"{agent}__{model}".replace("/", "-")
        p = out_dir / f"heatmap__{stem}.png"
        resolve_heatmap(d, p, agent, model)
        paths.append(p)
        p = out_dir / f"interventions__{stem}.png"
        intervention_histograms(d, p, agent, model)
        paths.append(p)
    p = out_dir / "cost_vs_resolve.png"
    cost_vs_resolve(d, p)
    paths.append(p)
    return paths
