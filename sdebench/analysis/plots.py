"""PNG plots of a sweep: resolve-rate heatmap (source x delivery), intervention histograms per
delivery, cost against resolve rate per delivery.

Each function draws with matplotlib's Agg backend, writes one PNG and returns the table it drew.
The PNG carries that table as JSON in its `Description` text chunk (and, for the heatmap, the pixel
where each cell's colour can be sampled), so a reader can check the picture against its data.
"""

from __future__ import annotations

import json
import math
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


MARKERS = "osD^v<>p*h"


def _fanned(n: int, size_pt: float) -> list[tuple[float, float]]:
    """Offsets in points that set `n` markers drawn at one spot around it, no two touching."""
    if n == 1:
        return [(0.0, 0.0)]
    radius = max(size_pt, size_pt * 1.15 * n / (2 * math.pi))  # chord between neighbours > one marker
    return [(radius * math.cos(2 * math.pi * i / n), radius * math.sin(2 * math.pi * i / n)) for i in range(n)]


def cost_vs_resolve(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Write a scatter of mean cost per episode against resolve rate, one point per agent/model and delivery; return the points.

    Colour says the delivery and the marker the agent/model (two legends, no text on the points, so no
    label can cover another); points at the same spot are fanned out around it. The PNG metadata
    holds each point's pixel.
    """
    plt = _pyplot()
    import matplotlib.colors
    from matplotlib.lines import Line2D
    from matplotlib.transforms import offset_copy

    t = analysis.ordered(analysis.metrics(df, ["agent", "model", "delivery"]))
    points = t[["agent", "model", "delivery", "mean_cost_usd", "resolve_rate", "episodes"]].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=DPI)
    deliveries = [d for d in analysis.DELIVERIES if d in set(points["delivery"])] + sorted(
        set(points["delivery"]) - set(analysis.DELIVERIES))
    colour = {d: f"C{i % 10}" for i, d in enumerate(deliveries)}
    cells = sorted({(a, m) for a, m in zip(points["agent"], points["model"], strict=True)})
    marker = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(cells)}
    size_pt = 8.0
    spots: dict[tuple[float, float], list[int]] = {}
    for i, r in points.iterrows():
        if pd.notna(r["mean_cost_usd"]) and pd.notna(r["resolve_rate"]):
            spots.setdefault((round(float(r["mean_cost_usd"]), 6), round(float(r["resolve_rate"]), 6)), []).append(i)
    drawn = {}
    for (x, y), members in spots.items():
        for i, (dx, dy) in zip(members, _fanned(len(members), size_pt), strict=True):
            r = points.loc[i]
            tr = offset_copy(ax.transData, fig=fig, x=dx, y=dy, units="points")
            ax.plot([x], [y], linestyle="none", marker=marker[(r["agent"], r["model"])], markersize=size_pt,
                    color=colour[r["delivery"]], markeredgecolor="k", markeredgewidth=0.5, transform=tr,
                    clip_on=False)  # a fanned marker at the edge is drawn whole
            drawn[i] = (x, y, dx, dy)
    ax.set_xlabel("mean cost per episode (USD)")
    ax.set_ylabel("resolve rate")
    ax.set_ylim(-0.1, 1.1)
    ax.margins(x=0.15)
    ax.set_title("cost against resolve rate (colour: delivery; marker: agent/model)")

    if len(points):
        by_delivery = [Line2D([], [], linestyle="none", marker="o", color=colour[d], markeredgecolor="k",
                              markeredgewidth=0.5, label=d) for d in deliveries]
        by_agent = [Line2D([], [], linestyle="none", marker=marker[c], color="0.6", markeredgecolor="k",
                           markeredgewidth=0.5, label=f"{c[0]}/{c[1]}") for c in cells]
        first = ax.legend(handles=by_delivery, title="delivery", fontsize=8, title_fontsize=8,
                          loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        ax.add_artist(first)
        ax.legend(handles=by_agent, title="agent/model", fontsize=8, title_fontsize=8, loc="lower left",
                  bbox_to_anchor=(1.02, 0.0), borderaxespad=0)
    fig.tight_layout()
    fig.canvas.draw()
    height = fig.canvas.get_width_height()[1]
    scale = DPI / 72  # points to pixels
    meta_points = []
    for i, r in points.iterrows():
        row = {k: (None if pd.isna(v) else v) for k, v in r.items()}
        if i in drawn:
            x, y, dx, dy = drawn[i]
            px, py = ax.transData.transform((x, y))
            row["px"] = [int(round(px + dx * scale)), int(round(height - (py + dy * scale)))]
            row["colour"] = matplotlib.colors.to_hex(colour[r["delivery"]])
        meta_points.append(row)
    _save(fig, path, {"kind": "cost_vs_resolve", "marker_px": size_pt * scale, "points": meta_points})
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
