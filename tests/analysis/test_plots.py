"""Plots: real PNGs whose pictures and embedded tables match the records they were drawn from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdebench.analysis import plots
from sdebench.analysis import tables as analysis
from sdebench.runs import results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def rec(task, source, delivery, resolved, interventions, cost=0.0):
    return {"agent": "a", "model": "m", "source": source, "family": "f", "bottleneck": "b", "task_id": task,
            "seed": 0, "delivery": delivery, "resolved": resolved, "interventions": interventions,
            "stop_reason": "resolved" if resolved else "max_interventions", "cost_usd": cost, "turns": 1,
            "prompt_tokens": 0, "completion_tokens": 0, "tool_calls": {}}


@pytest.fixture
def records() -> pd.DataFrame:
    rows = []
    # K/oracle resolves 3/4, K/squashed 1/4, H/oracle 0/4, H/squashed 4/4
    for source, delivery, n_ok in (("K", "oracle", 3), ("K", "squashed", 1), ("H", "oracle", 0), ("H", "squashed", 4)):
        for i in range(4):
            ok = i < n_ok
            rows.append(rec(f"t{i}", source, delivery, ok, i if ok else 5, cost=0.1 * (i + 1) if delivery == "oracle" else 0.0))
    return pd.DataFrame(rows)


def read_png(path):
    import matplotlib.image

    assert path.read_bytes()[:8] == PNG_MAGIC
    img = matplotlib.image.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert img[..., :3].std() > 0.05  # not a blank canvas
    return img


def test_heatmap_cells_have_the_colour_of_their_resolve_rate(records, tmp_path):
    import matplotlib

    p = tmp_path / "h.png"
    m = plots.resolve_heatmap(records, p, "a", "m")
    assert m.loc["K", "oracle"] == 0.75 and m.loc["H", "squashed"] == 1.0
    assert list(m.index) == ["H", "K"] and list(m.columns) == ["squashed", "oracle"]
    img = read_png(p)
    meta = plots.png_metadata(p)
    cmap = matplotlib.colormaps[meta["cmap"]]
    expected = {("K", "oracle"): 0.75, ("K", "squashed"): 0.25, ("H", "oracle"): 0.0, ("H", "squashed"): 1.0}
    assert {(c["source"], c["delivery"]): c["value"] for c in meta["cells"]} == expected
    for c in meta["cells"]:
        x, y = c["px"]
        want = np.array(cmap(expected[(c["source"], c["delivery"])])[:3])
        assert np.abs(img[y, x, :3] - want).max() < 0.03, (c, img[y, x], want)


def test_intervention_histograms_count_every_episode(records, tmp_path):
    p = tmp_path / "i.png"
    t = plots.intervention_histograms(records, p, "a", "m")
    read_png(p)
    assert t["resolved"].sum() + t["unresolved"].sum() == len(records)
    sq = t[t["delivery"] == "squashed"].set_index("interventions")
    # squashed: H resolves at 0,1,2,3 and K at 0; K's three failures sit at the cap
    assert sq["resolved"].tolist() == [2, 1, 1, 1, 0, 0] and sq["unresolved"].tolist() == [0, 0, 0, 0, 0, 3]
    assert plots.png_metadata(p)["counts"] == t.to_dict(orient="records")


def test_cost_vs_resolve_points(records, tmp_path):
    p = tmp_path / "c.png"
    pts = plots.cost_vs_resolve(records, p).set_index("delivery")
    read_png(p)
    assert pts.loc["oracle", "resolve_rate"] == 3 / 8 and pts.loc["squashed", "resolve_rate"] == 5 / 8
    assert pts.loc["oracle", "mean_cost_usd"] == pytest.approx(0.25) and pts.loc["squashed", "mean_cost_usd"] == 0.0
    meta = plots.png_metadata(p)["points"]
    assert sorted((q["delivery"], q["resolve_rate"]) for q in meta) == [("oracle", 0.375), ("squashed", 0.625)]


def test_cost_vs_resolve_points_never_cover_each_other(tmp_path):
    # three agents x three deliveries, every one unresolved at no cost: nine points at one spot
    rows = [{**rec("t0", "K", d, False, 5), "agent": a} for a in ("x", "y", "z") for d in ("full", "squashed", "oracle")]
    p = tmp_path / "c.png"
    plots.cost_vs_resolve(pd.DataFrame(rows), p)
    img = read_png(p)
    meta = plots.png_metadata(p)
    pts = meta["points"]
    assert len(pts) == 9 and len({tuple(q["px"]) for q in pts}) == 9
    for i, a in enumerate(pts):
        for b in pts[i + 1:]:
            assert np.hypot(a["px"][0] - b["px"][0], a["px"][1] - b["px"][1]) >= meta["marker_px"], (a, b)
        # the centre of each marker shows its delivery's colour: no other marker is drawn over it
        x, y = a["px"]
        want = np.array(tuple(int(a["colour"][k:k + 2], 16) / 255 for k in (1, 3, 5)))
        assert np.abs(img[y, x, :3] - want).max() < 0.03, (a, img[y, x])


@pytest.mark.slow
def test_plots_of_a_real_sweep(small_sweep, tmp_path):
    df = results.load(small_sweep)
    paths = plots.write_all(df, tmp_path / "plots")
    assert len(paths) == 2 * 3 + 1
    for p in paths:
        read_png(p)
    meta = plots.png_metadata(tmp_path / "plots" / "heatmap__oracle__none.png")
    assert {c["value"] for c in meta["cells"]} == {1.0}
    cell = analysis.by_cell(df)
    assert len(meta["cells"]) == len(cell[cell["agent"] == "oracle"])
