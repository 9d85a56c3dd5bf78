"""Stream metrics and the learning-curve plot: episode records in, plain rows, tables and figures out.

A position row (one task of one stream) holds the in-stream outcome, the carried memory it
received (items, tokens) and, if run, the same task's fresh outcome. Forward transfer at a
position is fresh minus in-stream interventions (positive: carried memory saved feedback
rounds) and in-stream minus fresh resolved (1: memory turned a failure into a fix).

An episode that ended in error has no outcome (sdebench.runs.rules.is_error): a position whose
in-stream or fresh episode errored has no transfer, and the learning curve's rates and means are
over the runs that did not error (`runs`), with `errors` counting the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sdebench.runs.record import EpisodeRecord, StreamPosition
from sdebench.runs.rules import ERROR, is_error

STREAM_JSON = "stream.json"


def position_row(rec: EpisodeRecord, fresh: EpisodeRecord | None = None) -> dict[str, Any]:
    """One row of a stream from its EpisodeRecord and (optionally) the fresh record of the same task."""
    s = rec.stream or StreamPosition()
    row = {
        "stream_id": s.stream_id,
        "position": int(s.stream_position or 0),
        "task_id": rec.identity.task_id,
        "source": rec.identity.source,
        "resolved": rec.outcome.resolved,
        "interventions": rec.outcome.interventions,
        "stop_reason": rec.outcome.stop_reason,
        "memory_items": int(s.memory_items or 0),
        "memory_f": int(s.memory_f or 0),
        "memory_x": int(s.memory_x or 0),
        "memory_tokens": int(s.memory_tokens or 0),
        "fresh_resolved": None,
        "fresh_interventions": None,
        "fresh_error": fresh is not None and is_error(fresh),
        "transfer_resolved": None,
        "transfer_interventions": None,
    }
    if fresh is not None and not row["fresh_error"]:
        row["fresh_resolved"] = fresh.outcome.resolved
        row["fresh_interventions"] = fresh.outcome.interventions
    if row["fresh_resolved"] is not None and not is_error(rec):  # an errored side has no outcome to compare
        row["transfer_resolved"] = int(row["resolved"]) - int(row["fresh_resolved"])
        row["transfer_interventions"] = row["fresh_interventions"] - row["interventions"]
    return row


def rows_from_records(records: Iterable[EpisodeRecord]) -> dict[str, list[dict[str, Any]]]:
    """Stream id -> position rows, from EpisodeRecords that carry stream fields (fresh left out)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.stream is not None and r.stream.stream_id is not None:
            out.setdefault(str(r.stream.stream_id), []).append(position_row(r))
    return {k: sorted(v, key=lambda row: row["position"]) for k, v in out.items()}


def load_streams(*dirs: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Stream id -> rows from every stream.json under `dirs` (several jobs of one id are concatenated)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for d in dirs:
        d = Path(d)
        files = [d] if d.is_file() else sorted(d.rglob(STREAM_JSON))
        for f in files:
            data = json.loads(f.read_text())
            out.setdefault(str(data["stream_id"]), []).extend(data["positions"])
    return out


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    return sum(r[key] for r in rows) / len(rows) if rows else None


def _errored(row: dict[str, Any]) -> bool:
    """Whether a position row's episode ended in error (its stop_reason: the rule of sdebench.runs.rules.is_error)."""
    return row.get("stop_reason") == ERROR


def learning_curve(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per position (over one or several runs of a stream): resolve rate, mean interventions, memory, transfer,
    over the runs that did not end in error (None where none did)."""
    by_pos: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_pos.setdefault(int(r["position"]), []).append(r)
    out = []
    for pos in sorted(by_pos):
        rs = [r for r in by_pos[pos] if not _errored(r)]
        fresh = [r for r in by_pos[pos] if r.get("fresh_resolved") is not None]
        paired = [r for r in by_pos[pos] if r.get("transfer_interventions") is not None]
        out.append({
            "position": pos,
            "runs": len(rs),
            "errors": len(by_pos[pos]) - len(rs),
            "resolve_rate": _mean(rs, "resolved"),
            "mean_interventions": _mean(rs, "interventions"),
            "mean_memory_items": _mean(rs, "memory_items"),
            "mean_memory_tokens": _mean(rs, "memory_tokens"),
            "fresh_resolve_rate": _mean(fresh, "fresh_resolved"),
            "fresh_mean_interventions": _mean(fresh, "fresh_interventions"),
            "mean_transfer_interventions": _mean(paired, "transfer_interventions"),
        })
    return out


def forward_transfer(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over a stream: positions where memory helped, hurt, and the interventions saved; `errors`
    counts the positions run fresh too that have no transfer because one of the two episodes ended in error."""
    paired = [r for r in rows if r.get("transfer_resolved") is not None]
    return {
        "positions": len(paired),
        "gained": sum(r["transfer_resolved"] == 1 for r in paired),
        "lost": sum(r["transfer_resolved"] == -1 for r in paired),
        "interventions_saved": sum(r["transfer_interventions"] for r in paired),
        "errors": sum(bool(r.get("fresh_error")) or (r.get("fresh_resolved") is not None and _errored(r)) for r in rows),
    }


def markdown(stream_id: str, rows: list[dict[str, Any]]) -> str:
    """A per-position table of one stream and its forward-transfer totals."""
    out = [f"### stream {stream_id}\n", "| pos | task | resolved | interventions | memory items (F/X) | memory tokens "
           "| fresh resolved | fresh interventions | transfer (interventions saved) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["position"]):
        fresh = r.get("fresh_resolved")
        fresh_text = "error" if r.get("fresh_error") else "" if fresh is None else ("yes" if fresh else "no")
        out.append(
            f"| {r['position']} | {r['task_id']} | {'error' if _errored(r) else 'yes' if r['resolved'] else 'no'} "
            f"| {r['interventions']} | {r['memory_items']} ({r['memory_f']}/{r['memory_x']}) | {r['memory_tokens']} "
            f"| {fresh_text} "
            f"| {'' if r.get('fresh_interventions') is None else r['fresh_interventions']} "
            f"| {'' if r.get('transfer_interventions') is None else r['transfer_interventions']} |"
        )
    ft = forward_transfer(rows)
    if ft["positions"]:
        out.append(f"\nForward transfer: {ft['gained']} tasks gained, {ft['lost']} lost, "
                   f"{ft['interventions_saved']} interventions saved over {ft['positions']} positions.")
    if ft["errors"]:
        out.append(f"\n{ft['errors']} positions have no transfer: an episode ended in error.")
    return "\n".join(out) + "\n"


def plot_learning_curve(streams: dict[str, list[dict[str, Any]]], out: str | Path, title: str = "") -> Path:
    """Plot interventions and resolve rate per position (one line per stream) and memory growth; save a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    fig, (ax_i, ax_r, ax_m) = plt.subplots(1, 3, figsize=(13, 3.8))
    for sid, rows in sorted(streams.items()):
        curve = learning_curve(rows)
        x = [c["position"] for c in curve]
        ax_i.plot(x, [c["mean_interventions"] for c in curve], marker="o", label=sid)
        ax_r.plot(x, [c["resolve_rate"] for c in curve], marker="o", label=sid)
        ax_m.plot(x, [c["mean_memory_tokens"] for c in curve], marker="o", label=sid)
        if any(c["fresh_mean_interventions"] is not None for c in curve):
            ax_i.plot(x, [c["fresh_mean_interventions"] for c in curve], linestyle=":", color="grey")
    ax_i.set(xlabel="stream position", ylabel="interventions", title="interventions (dotted: fresh)")
    ax_r.set(xlabel="stream position", ylabel="resolve rate", title="resolve rate", ylim=(-0.05, 1.05))
    ax_m.set(xlabel="stream position", ylabel="tokens (chars/4)", title="carried memory")
    ax_i.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
