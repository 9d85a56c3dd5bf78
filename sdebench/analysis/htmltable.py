"""DataFrames as escaped HTML tables for the report: each in its own scroll box, so a wide table
scrolls inside the page instead of widening it, and with the columns that hold one value in every
row folded into a caption (`fold=True`), so only what varies takes a column.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd


def esc(value: Any) -> str:
    """`value` as escaped HTML text."""
    return html.escape("" if value is None else str(value), quote=True)


def text(v: Any, floatfmt: str = "{:.3f}") -> str:
    """How a table shows one value: floats with `floatfmt`, missing values blank."""
    if isinstance(v, float) and pd.notna(v):
        return floatfmt.format(v)
    return "" if _isna(v) else str(v)


def _isna(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def constant_columns(df: pd.DataFrame, keep: tuple[str, ...] = (), floatfmt: str = "{:.3f}") -> dict[str, str]:
    """The columns of `df` (two rows or more) showing one value in every row, with that value; `keep` never folds."""
    if len(df) < 2:
        return {}
    out = {}
    for col in df.columns:
        shown = {text(v, floatfmt) for v in df[col]}
        if col not in keep and len(shown) == 1:
            out[str(col)] = shown.pop()
    if len(out) == len(df.columns):  # identical rows: keep the first column, something must stay a table
        out.pop(str(df.columns[0]))
    return out


def caption(folded: dict[str, str]) -> str:
    """The caption naming the folded columns: `col=value` for each, the blank ones as `empty`."""
    same = [f"{c}={v}" for c, v in folded.items() if v != ""]
    empty = [c for c, v in folded.items() if v == ""]
    parts = ([f"Same in every row: {', '.join(same)}."] if same else []) + (
        [f"Empty in every row: {', '.join(empty)}."] if empty else [])
    return " ".join(parts)


def table(df: pd.DataFrame | None, links: dict[int, str] | None = None, floatfmt: str = "{:.3f}",
          fold: bool = False) -> str:
    """`df` as an escaped HTML table in a scroll box; `links` maps a row position to an href for its first
    cell; with `fold` the constant columns go into the caption."""
    if df is None or df.empty:
        return "<p><em>no rows</em></p>"
    folded = constant_columns(df, keep=(df.columns[0],) if links else (), floatfmt=floatfmt) if fold else {}
    df = df[[c for c in df.columns if str(c) not in folded]]
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    rows = []
    for n, row in enumerate(df.itertuples(index=False)):
        cells = []
        for k, v in enumerate(row):
            cell = esc(text(v, floatfmt))
            if k == 0 and links and n in links:
                cell = f'<a href="{esc(links[n])}">{cell}</a>'
            cells.append(f"<td>{cell}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{esc(caption(folded))}</caption>" if folded else ""
    return f'<div class="scroll"><table>{cap}<tr>{head}</tr>\n' + "\n".join(rows) + "</table></div>"
