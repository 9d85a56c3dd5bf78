"""Episode records as Inspect AI eval logs, so `inspect view` browses, filters and compares sweeps.

Written without inspect_ai: the log is Inspect's JSON eval-log format, version `LOG_VERSION`
(`EvalLog`: `eval` (EvalSpec), `plan`, `results` (EvalResults), `stats`, `samples` (EvalSample)),
which `inspect_ai.log.read_eval_log` and `inspect view` read.

One log per sweep cell: the episodes that share kind (static or stream), task set, feedback policy,
agent, model, delivery and outcome-relevant config (the cell a summary row pools, with the
config hash besides). Each log's task is `sdebench-<delivery>`, its model the record's model, its
solver the agent, so the log list sets cells side by side; every sample carries family, source,
tier, competency, outcome, ... as metadata for the sample filter. One sample per episode: id = the
task id, epoch = the episode's rank among that task's episodes in the cell, by seed; its messages
rebuilt from the trajectory, its scores (resolved, resolved_first, interventions), its usage and
times. An episode
that ended in error is a sample with an `error` and no score, as Inspect records a failed sample
(and, as in every sdebench table, outside every rate).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sdebench import __version__
from sdebench.agents import trajectory as traj_mod
from sdebench.interop.inspect_messages import messages
from sdebench.runs import results as results_mod
from sdebench.runs import rules
from sdebench.runs.record import EpisodeRecord

LOG_VERSION = 2  # inspect_ai.log.EvalLog.version this writes (inspect-ai 0.3.x reads versions <= 2)
EXPORT_VERSION = 1  # the sdebench export's own layout (log metadata `sdebench_export`)
SCORERS = ("resolved", "resolved_first", "interventions")
MAX_ANSWER_CHARS = 20_000  # the final diff shown as a score's answer


@dataclass(frozen=True)
class LogCell:
    """The sweep cell of an episode: what one eval log holds."""

    kind: str  # static | stream
    task_set: str
    feedback: str
    agent: str
    model: str
    delivery: str
    config_hash: str

    def label(self) -> str:
        """The log's task name."""
        return f"sdebench-{self.delivery}"


@dataclass
class Exported:
    """What an export wrote: log paths, episodes per log, and files skipped (where, why)."""

    logs: list[Path] = field(default_factory=list)
    samples: int = 0
    errors: int = 0  # episodes exported as errored samples
    skipped: list[tuple[str, str]] = field(default_factory=list)


def cell_of(rec: EpisodeRecord) -> LogCell:
    """The cell of `rec` (sdebench.runs.results.summarize's groups, plus the config hash)."""
    i = rec.identity
    return LogCell("stream" if rec.stream is not None and rec.stream.stream_id else "static", rules.task_set(rec),
                   rules.feedback_policy(rec), i.agent, i.model, i.delivery, rec.storage.config_hash or "-")


# --- one sample -----------------------------------------------------------------------------------
def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat()


def _events(rec: EpisodeRecord, path: Path) -> list[dict[str, Any]]:
    traj = rec.storage.trajectory
    for candidate in (Path(traj) if traj else None, results_mod.trajectory_path(path)):
        if candidate is not None and candidate.is_file():
            return traj_mod.read(candidate)
    return []


def usage(rec: EpisodeRecord) -> dict[str, Any]:
    """The episode's model usage as Inspect's ModelUsage (input tokens include cached ones, as in the record)."""
    u = rec.usage
    return {"input_tokens": u.prompt_tokens, "output_tokens": u.completion_tokens, "total_tokens": u.tokens,
            "input_tokens_cache_read": u.cached_tokens or None, "total_cost": u.cost_usd}


def metadata(rec: EpisodeRecord, path: Path) -> dict[str, Any]:
    """The sample metadata `inspect view` filters on: the episode's identity, outcome, effort and storage."""
    i, o, u, t, s = rec.identity, rec.outcome, rec.usage, rec.timing, rec.storage
    meta: dict[str, Any] = {
        "task_id": i.task_id, "family": i.family, "variant": i.variant, "source": i.source,
        "bottleneck": i.bottleneck, "competency": rules.competency(rec), "tier": rules.tier(rec),
        "delivery": i.delivery, "agent": i.agent, "model": i.model, "seed": i.seed,
        "task_set": rules.task_set(rec), "feedback_policy": rules.feedback_policy(rec),
        "outcome": rules.outcome_label(rec), "resolved": o.resolved, "resolved_at": rules.resolved_at(rec),
        "stop_reason": o.stop_reason, "error": o.error, "interventions": o.interventions,
        "max_interventions": o.max_interventions, "turns": u.turns, "model_calls": u.model_calls,
        "tool_calls": u.tool_calls, "tool_errors": u.tool_errors, "cost_usd": u.cost_usd,
        "wall_s": t.wall_s, "setup_s": t.setup_s, "model_s": t.model_s, "tools_s": t.tools_s,
        "grading_s": t.grading_s, "delivery_info": rec.delivery.info(),
        "retrieval": rec.retrieval.to_dict() if rec.retrieval is not None else None,
        "task_hash": s.task_hash, "config_hash": s.config_hash, "key": s.key, "record": str(path.resolve()),
    }
    if rec.stream is not None and rec.stream.stream_id:
        meta |= {k: getattr(rec.stream, k) for k in ("stream_id", "stream_position", "stream_carry", "stream_length",
                                                     "memory_items", "memory_f", "memory_x", "memory_tokens")}
    return meta


def scores(rec: EpisodeRecord) -> dict[str, dict[str, Any]] | None:
    """The sample's scores, one per scorer of SCORERS; None for an episode that ended in error (no outcome)."""
    if rules.is_error(rec):
        return None
    last = rec.attempts[-1] if rec.attempts else None
    o = rec.outcome
    detail = {"stop_reason": o.stop_reason, "resolved_at": rules.resolved_at(rec),
              "counts": last.counts if last else {}, "pass_ratio": last.pass_ratio if last else 0.0,
              "guards": last.guards if last else [], "attempts": [asdict(a) for a in rec.attempts]}
    diff = o.final_diff if len(o.final_diff) <= MAX_ANSWER_CHARS else o.final_diff[:MAX_ANSWER_CHARS] + "\n[...]"
    explanation = rules.outcome_label(rec) + (f"\nlast feedback:\n{o.feedback[-1]}" if o.feedback and not o.resolved else "")
    return {
        "resolved": {"value": 1.0 if o.resolved else 0.0, "answer": diff, "explanation": explanation, "metadata": detail},
        "resolved_first": {"value": 1.0 if rules.resolved_first(rec) else 0.0},
        # counted as every table counts them: an unresolved episode at its cap
        "interventions": {"value": rules.counted_interventions(rec)},
    }


def sample(rec: EpisodeRecord, path: Path, epoch: int) -> dict[str, Any]:
    """One episode as an Inspect EvalSample."""
    events = _events(rec, path)
    i = rec.identity
    msgs = messages(events, i.model)
    times = [e["t"] for e in events if isinstance(e.get("t"), int | float)]
    first_user = next((m["content"] for m in msgs if m["role"] == "user"), None)
    last_reply = next((m for m in reversed(msgs) if m["role"] == "assistant"), None)
    out: dict[str, Any] = {
        "id": i.task_id,
        "epoch": epoch,
        "input": first_user or f"sdebench task {i.task_id} (delivery {i.delivery})",
        "target": "",  # the fact stays out of the log
        "messages": msgs,
        "output": {"model": i.model, "completion": last_reply["content"] if last_reply else "",
                   "choices": [{"message": last_reply, "stop_reason": "stop"}] if last_reply else [],
                   "usage": usage(rec)},
        "scores": scores(rec),
        "metadata": metadata(rec, path),
        "model_usage": {i.model: usage(rec)},
        "started_at": _iso(min(times)) if times else None,
        "completed_at": _iso(max(times)) if times else None,
        "total_time": rec.timing.wall_s,
        "working_time": rec.timing.wall_s,
        "uuid": rec.key,
        "turn_count": rec.usage.turns,
    }
    if rules.is_error(rec):
        tb = next((e.get("traceback") for e in reversed(events) if e.get("kind") == "error" and e.get("traceback")), "")
        message = rec.outcome.error or "the episode ended in error"
        out["error"] = {"message": message, "traceback": tb or message, "traceback_ansi": tb or message}
    return out


# --- one log --------------------------------------------------------------------------------------
def _metric(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "value": value, "params": {}}


def _metrics(values: list[float]) -> dict[str, dict[str, Any]]:
    n = len(values)
    mean = sum(values) / n if n else 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return {"mean": _metric("mean", mean), "stderr": _metric("stderr", math.sqrt(var / n) if n else 0.0)}


def _sum_usage(items: Iterable[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "input_tokens_cache_read": 0,
                             "total_cost": 0.0}
    for u in items:
        for k in total:
            total[k] += u.get(k) or 0
    total["input_tokens_cache_read"] = total["input_tokens_cache_read"] or None
    return total


def eval_log(cell: LogCell, episodes: list[tuple[EpisodeRecord, Path]], run_id: str) -> dict[str, Any]:
    """The Inspect EvalLog (a JSON object) of one cell's episodes."""
    ordered = sorted(episodes, key=lambda e: (e[0].identity.task_id, e[0].identity.seed, e[0].key or str(e[1])))
    epochs: dict[str, int] = {}
    samples = []
    for rec, path in ordered:  # a task's episodes in seed order are its epochs 1, 2, ...
        tid = rec.identity.task_id
        epochs[tid] = epochs.get(tid, 0) + 1
        samples.append(sample(rec, path, epochs[tid]))
    samples.sort(key=lambda s: (s["epoch"], s["id"]))  # Inspect's own order
    scored = [s for s in samples if s["scores"] is not None]
    key = json.dumps([vars(cell), [r.key or str(p) for r, p in ordered]])
    eval_id = hashlib.sha256(key.encode()).hexdigest()[:22]
    starts = [s["started_at"] for s in samples if s["started_at"]]
    ends = [s["completed_at"] for s in samples if s["completed_at"]]
    mtime = max(p.stat().st_mtime for _, p in episodes)
    created = min(starts) if starts else _iso(mtime)
    cell_meta = {"sdebench_export": EXPORT_VERSION, **vars(cell)}
    usage_total = _sum_usage(s["model_usage"][cell.model] for s in samples)
    spec = {
        "eval_id": eval_id, "run_id": run_id, "created": created, "task": cell.label(), "task_id": eval_id,
        "task_version": 0, "task_display_name": f"sdebench {cell.delivery}",
        "task_args": {"delivery": cell.delivery, "feedback_hidden": cell.feedback, "task_set": cell.task_set},
        "solver": cell.agent, "solver_args": {}, "tags": [cell.delivery, cell.agent, cell.task_set, cell.feedback, cell.kind],
        "dataset": {"name": cell.task_set, "samples": len({s["id"] for s in samples}),
                    "sample_ids": sorted({s["id"] for s in samples})},
        "model": cell.model, "config": {"epochs": max(s["epoch"] for s in samples), "fail_on_error": False},
        "packages": {"sdebench": __version__}, "metadata": cell_meta,
    }
    score_list = []
    for name in SCORERS:
        values = [float(s["scores"][name]["value"]) for s in scored]
        score_list.append({"name": name, "scorer": name, "scored_samples": len(values),
                           "unscored_samples": len(samples) - len(values), "params": {}, "metrics": _metrics(values)})
    return {
        "version": LOG_VERSION,
        "status": "success",
        "eval": spec,
        "plan": {"name": "plan", "steps": [{"solver": cell.agent, "params": {}}], "config": {}},
        "results": {"total_samples": len(samples), "completed_samples": len(scored), "scores": score_list,
                    "metadata": {"errors": len(samples) - len(scored)}},
        "stats": {"started_at": created, "completed_at": max(ends) if ends else created,
                  "model_usage": {cell.model: usage_total}},
        "samples": samples,
    }


def _safe(text: str) -> str:
    """A file-name part without `_` (Inspect splits log names `<created>_<task>_<id>` on it)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-") or "x"


def log_name(log: dict[str, Any]) -> str:
    """The file name Inspect lists a log under: `<created>_<task>_<eval id>.json`."""
    created = log["eval"]["created"][:19].replace(":", "-") + "+00-00"
    return f"{created}_{_safe(log['eval']['task'])}_{log['eval']['eval_id']}.json"


def export(sources: Iterable[str | Path], out: Path) -> Exported:
    """Write one Inspect eval log per sweep cell of the records under `sources` into `out`."""
    report = Exported()
    cells: dict[LogCell, dict[str, tuple[EpisodeRecord, Path]]] = {}
    for path in results_mod.record_files(*sources):
        try:
            rec = results_mod.load_record(path)
        except (OSError, results_mod.RecordError) as e:
            report.skipped.append((str(path), str(e)))
            continue
        cells.setdefault(cell_of(rec), {}).setdefault(rec.key or str(path), (rec, path))
    if not cells:
        return report
    out.mkdir(parents=True, exist_ok=True)
    run_id = hashlib.sha256(json.dumps(sorted(k for c in cells.values() for k in c)).encode()).hexdigest()[:22]
    for cell in sorted(cells, key=lambda c: tuple(vars(c).values())):
        log = eval_log(cell, list(cells[cell].values()), run_id)
        path = out / log_name(log)
        results_mod.write_atomic(path, json.dumps(log, indent=1, sort_keys=False, default=str, allow_nan=False))
        report.logs.append(path)
        report.samples += len(log["samples"])
        report.errors += log["results"]["metadata"]["errors"]
    return report
