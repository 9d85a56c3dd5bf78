"""Episode records on disk: one JSON file per episode (sdebench.runs.record), written atomically,
keyed so a rerun skips done work; summaries and the `python -m sdebench.results` command.

Layout: `<results_dir>/<task_id>/<delivery>__<agent>__<model>__s<seed>__<key>.json`, the
trajectory beside it as `.jsonl`. The key hashes the task's content hash, delivery, agent,
model, seed and the hash of the outcome-relevant config, so a changed task or setting never
reuses an old record. Each Hydra job also lists its record paths in `episodes.txt` in its output
dir; `load` reads records from results dirs and from run/multirun dirs through those lists.

Summaries are computed in plain Python (single runs print them without importing pandas);
`load` and the parquet file use pandas.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sdebench.components import memory_system_of
from sdebench.grading.options import DEFAULT_FEEDBACK
from sdebench.runs import summary
from sdebench.runs.config import settings
from sdebench.runs.record import (
    DEFAULT_MAX_INTERVENTIONS,
    FIELDS,
    LEAF_TYPES,
    EpisodeRecord,
    Identity,
    RecordError,
)
from sdebench.runs.schema import RunConfig

MANIFEST = "episodes.txt"
# The config parts that can change an episode's outcome are hashed (config_hash): agent, model, delivery,
# limits, max_interventions and tools; paths, filters and launcher settings cannot.
# Outcome-relevant keys left out of the hash because they were never in it: `model.cost_tracking`
# was a top-level key before it moved under `model`, and hashing it now would orphan old records;
# `model.gateway_route` changes how the gateway reaches the model, not what it sends (the same body,
# tests/gateway/test_server.py).
UNHASHED_MODEL_KEYS = ("cost_tracking", "gateway_route")


def config_hash(cfg: RunConfig | Mapping[str, Any]) -> str:
    """A short hash of the outcome-relevant part of a run config (typed, or a resolved mapping)."""
    conf = settings(cfg)
    part: dict[str, Any] = {"agent": conf.agent, "model": conf.model, "delivery": conf.delivery,
                            "limits": dataclasses.asdict(conf.limits), "max_interventions": conf.max_interventions,
                            "tools": dataclasses.asdict(conf.tools)}
    if isinstance(part["model"], dict):
        part["model"] = {k: v for k, v in part["model"].items() if k not in UNHASHED_MODEL_KEYS}
    # The feedback policy changes what an agent learns per submit, so it is outcome-relevant; the
    # default is left out so records made before the option existed keep their hash.
    # The memory system is outcome-relevant where the delivery serves one; BM25, the only system
    # before the `memory` group, is left out so older memtool records keep their hash.
    if memory_system_of(conf.delivery, conf.memory) not in (None, "bm25"):
        part["memory"] = {k: v for k, v in dict(conf.memory or {}).items() if k != "cache_dir"}
    if conf.grading.feedback_hidden != DEFAULT_FEEDBACK:
        part["feedback_hidden"] = conf.grading.feedback_hidden
    return hashlib.sha256(json.dumps(part, sort_keys=True, default=str).encode()).hexdigest()[:12]


def episode_key(task_hash: str, delivery: str, agent: str, model: str, seed: int, cfg_hash: str) -> str:
    """The key of one episode."""
    raw = json.dumps([task_hash, delivery, agent, model, int(seed), cfg_hash])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip("-") or "x"


def record_path(results_dir: Path, ident: Identity, key: str) -> Path:
    """Where the record of an episode with identity `ident` and `key` lives."""
    name = f"{_safe(ident.delivery)}__{_safe(ident.agent)}__{_safe(ident.model)}__s{ident.seed}__{key}.json"
    return Path(results_dir) / _safe(ident.task_id) / name


def trajectory_path(record: Path) -> Path:
    """The trajectory file beside a record."""
    return record.with_suffix(".jsonl")


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so a reader sees the old file or the whole new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{socket.gethostname()}-{os.getpid()}-{threading.get_ident()}.tmp")  # unique across hosts and threads
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_record(path: Path, record: EpisodeRecord) -> None:
    """Write one episode record atomically."""
    write_atomic(path, record.to_json())


def load_record(path: Path) -> EpisodeRecord:
    """The record at `path`; OSError if unreadable, RecordError if it is torn or not a record."""
    try:
        text = Path(path).read_bytes().decode()
    except UnicodeDecodeError:
        raise RecordError("not UTF-8 text") from None
    return EpisodeRecord.from_json(text)


def read_record(path: Path) -> EpisodeRecord | None:
    """The record at `path`, or None if it is missing, torn or not a record."""
    try:
        return load_record(path)
    except (OSError, RecordError):
        return None


def clean_stale(path: Path) -> None:
    """Remove temp files a killed writer left beside `path`."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        tmp.unlink(missing_ok=True)


def append_manifest(job_dir: Path, record: Path) -> None:
    """List a record path in a job's manifest (one line per episode, flushed at once)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    with open(job_dir / MANIFEST, "a") as f:
        f.write(str(Path(record).resolve()) + "\n")
        f.flush()
        os.fsync(f.fileno())


def record_files(*dirs: str | Path) -> list[Path]:
    """Record files found under `dirs`: JSON records directly, and those listed in manifests."""
    seen: dict[str, Path] = {}
    for d in dirs:
        d = Path(d)
        if d.is_file():
            candidates = [d]
        else:
            candidates = [p for p in d.rglob("*.json") if not p.name.startswith(".")]
            for manifest in d.rglob(MANIFEST):
                candidates += [Path(line) for line in manifest.read_text().splitlines() if line.strip()]
        for p in candidates:
            seen.setdefault(str(p.resolve()), p)
    return [seen[k] for k in sorted(seen)]


def read_records(*dirs: str | Path) -> list[EpisodeRecord]:
    """Every intact record under `dirs`, one per key."""
    out: dict[str, EpisodeRecord] = {}
    for p in record_files(*dirs):
        rec = read_record(p)
        if rec is not None:
            out.setdefault(rec.key or str(p), rec)
    return list(out.values())


def frame(records: Iterable[EpisodeRecord]):
    """A pandas DataFrame with one row per record: its flat view (EpisodeRecord.flat: every leaf field by name)."""
    import pandas as pd

    return pd.DataFrame([r.flat() for r in records])


def load(*dirs: str | Path):
    """A pandas DataFrame of every episode record under the given run, multirun or results dirs."""
    return frame(read_records(*dirs))


# identity fields a hand-made frame may lack, with what they read as
_ROW_DEFAULTS = {"task_id": "?", "family": "?", "variant": 0, "source": "?", "bottleneck": "?", "delivery": "?",
                 "agent": "?", "model": "?", "seed": 0, "stop_reason": "?"}


def records(df) -> list[EpisodeRecord]:
    """The typed records of the rows of a DataFrame (of `frame`, or made by hand): the inverse of `frame`.

    A missing or NaN value takes its default (identity fields and stop_reason: `?`, as `tables.prepare`
    fills them, or 0 for variant and seed);
    numbers stored as floats by pandas (a column with a gap) come back as the field's type.
    """
    known = set(FIELDS) | {"attempts", "delivery_info", "retrieval"}
    cols = [c for c in df.columns if c in known]
    out = []
    for row in df[cols].to_dict("records"):
        clean = {k: _native(k, v) for k, v in row.items() if not _missing(v)}
        out.append(EpisodeRecord.from_flat({**_ROW_DEFAULTS, **clean}))
    return out


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _native(name: str, v: Any) -> Any:
    """`v` as the JSON value its field holds (numpy scalars and integral floats of an int field unboxed)."""
    v = v.item() if hasattr(v, "item") and not isinstance(v, (list, dict, str)) else v
    kind = LEAF_TYPES.get(name)
    if kind is int and isinstance(v, float) and v.is_integer():
        return int(v)
    if kind is bool and isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    return v


# --- summaries (the one engine: sdebench.runs.summary) -------------------------------------------
GROUP = summary.CELL  # the cell of the run summary, beside `kind` (static or stream)
SUMMARY_COLUMNS = ("episodes", "errors", "resolved", "resolve_rate", "resolve_rate_lo", "resolve_rate_hi", "resolved_1",
                   "resolve_1", "resolve_1_lo", "resolve_1_hi", "interventions_capped", "interventions_resolved",
                   "retrieved", "cost_usd", "mean_prompt_tokens", "mean_completion_tokens", "mean_turns", "mean_wall_s",
                   "memory_cost_usd", "mean_memory_load_s")


def summarize(records: Iterable[EpisodeRecord], by: Sequence[str] = GROUP) -> list[dict[str, Any]]:
    """The summary rows of `records` per kind (static or stream) and group of `by` (default the cell;
    the never-pooled keys are always among the groups: sdebench.runs.summary.grouping).

    Rates and per-episode means are over the group's valid episodes (`episodes`: those that did not
    end in error; None when there are none); `errors` counts the others. `cost_usd` totals every
    episode, errored ones included: that money was spent.
    """
    keys = summary.grouping(by)
    return [{**{k: r[k] for k in keys}, **{c: r[c] for c in SUMMARY_COLUMNS}} for r in summary.summarize(records, keys)]


def markdown(rows: list[dict[str, Any]]) -> str:
    """The summary as markdown: per kind, task set, feedback policy, tier, agent and model, sources x deliveries,
    each cell `resolved/episodes (mean interventions)`."""
    from sdebench.runs import rules
    from sdebench.runs.rules import PUBLISHED, rate_ci

    if not rows:
        return "No episodes.\n"
    out = []
    heads = sorted({(r["kind"], r["task_set"], r["feedback_hidden"], r["tier"], r["agent"], r["model"]) for r in rows},
                   key=lambda h: (summary.rank("kind", h[0]), h[1] != PUBLISHED, h[1], h[2] != DEFAULT_FEEDBACK, h[2],
                                  summary.rank("tier", h[3]), h[4], h[5]))
    tiers = {r["tier"] for r in rows}
    for kind, tset, policy, tier, agent, model in heads:
        sub = summary.ordered([{**r, "delivery": rules.arm(r["delivery"], r.get("memory", "none"))} for r in rows
                               if (r["kind"], r["task_set"], r["feedback_hidden"], r["tier"], r["agent"],
                                   r["model"]) == (kind, tset, policy, tier, agent, model)],
                              ("source", "delivery"))
        deliveries = sorted({r["delivery"] for r in sub}, key=lambda d: summary.rank("delivery", d))
        sources = sorted({r["source"] for r in sub}, key=lambda s: summary.rank("source", s))
        cells = {(r["source"], r["delivery"]): r for r in sub}
        label = "" if kind == "static" else " (stream records, kept apart from static ones)"
        label += "" if tset == PUBLISHED else f" task set={tset}"
        # feedback beyond one bit lets a memoryless searcher resolve (docs/grading.md): said in the heading
        label += "" if policy == DEFAULT_FEEDBACK else f" feedback_hidden={policy}"
        # the hard tier (tasks whose fact must be worked out of memory) is never pooled with recall tasks
        label += "" if tier == "recall" and tiers == {"recall"} else f" tier={tier}"
        out.append(f"### agent={agent} model={model}{label}\n")
        out.append("resolve@1 (first submit, before any feedback: the headline), resolve@cap and interventions "
                   "(unresolved = the cap), with Wilson 95 % intervals, over the episodes that did not end in error; "
                   "errors: episodes that did (no outcome)\n")
        out.append("| source | delivery | resolve@1 | resolve@cap | interventions | errors | tokens in/out | cost |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in sub:
            out.append(f"| {r['source']} | {r['delivery']} | {rate_ci(r['resolved_1'], r['episodes'])} | "
                       f"{rate_ci(r['resolved'], r['episodes'])} | {_fmt(r['interventions_capped'], '.2f')} | {r['errors']} | "
                       f"{_fmt(r['mean_prompt_tokens'], '.0f')}/{_fmt(r['mean_completion_tokens'], '.0f')} | "
                       f"${r['cost_usd']:.4f} |")
        out.append("")
        out.append("cell: resolved/episodes (mean interventions); `!n`: n more episodes ended in error (not counted)\n")
        out.append("| source | " + " | ".join(deliveries) + " |")
        out.append("|---|" + "---|" * len(deliveries))
        for s in sources:
            line = []
            for d in deliveries:
                r = cells.get((s, d))
                if r is None:
                    line.append("")
                    continue
                cell = f"{r['resolved']}/{r['episodes']} ({_fmt(r['interventions_capped'], '.1f')})"
                line.append(cell + (f" !{r['errors']}" if r["errors"] else ""))
            out.append(f"| {s} | " + " | ".join(line) + " |")
        out.append("")
        out += _memory_systems(sub)
    return "\n".join(out) + "\n"


def _memory_systems(sub: list[dict[str, Any]]) -> list[str]:
    """Where a memory system other than BM25 served memtool: per source and system, the share of episodes
    whose decisive item was retrieved, resolve@1, and what loading took and cost (docs/memory.md)."""
    from sdebench.runs.rules import rate_ci

    rows = [r for r in sub if r.get("memory", "none") != "none"]
    if not any(r["memory"] != "bm25" for r in rows):
        return []
    out = ["memory systems: retrieved = episodes whose decisive memory item reached the agent (docs/retrieval.md); "
           "load = starting the system and loading the corpus; memory $ = the system's own model calls, apart from the agent's\n",
           "| source | memory | retrieved | resolve@1 | load s | memory $ | agent $ |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['source']} | {r['memory']} | {rate_ci(r['retrieved'], r['episodes'])} | "
                   f"{rate_ci(r['resolved_1'], r['episodes'])} | {_fmt(r['mean_memory_load_s'], '.2f')} | "
                   f"${r['memory_cost_usd']:.4f} | ${r['cost_usd']:.4f} |")
    return [*out, ""]


def group_markdown(rows: list[dict[str, Any]], keys: Sequence[str]) -> str:
    """Summary rows of any grouping as one markdown table: the keys, then resolve@1, resolve@cap,
    interventions, errors, tokens and cost (the columns of `markdown`)."""
    from sdebench.runs.rules import rate_ci

    if not rows:
        return "No episodes.\n"
    out = ["| " + " | ".join(keys) + " | episodes | resolve@1 | resolve@cap | interventions | errors | tokens in/out | cost |",
           "|" + "---|" * (len(keys) + 7)]
    for r in summary.ordered(rows, keys):
        out.append("| " + " | ".join(str(r[k]).replace("|", "\\|") for k in keys) + f" | {r['episodes']} | "
                   f"{rate_ci(r['resolved_1'], r['episodes'])} | {rate_ci(r['resolved'], r['episodes'])} | "
                   f"{_fmt(r['interventions_capped'], '.2f')} | {r['errors']} | "
                   f"{_fmt(r['mean_prompt_tokens'], '.0f')}/{_fmt(r['mean_completion_tokens'], '.0f')} | ${r['cost_usd']:.4f} |")
    return "\n".join(out) + "\n"


def _fmt(value: float | None, spec: str) -> str:
    """`value` formatted, or `-` when there is none (a group whose episodes all ended in error)."""
    return "-" if value is None else format(value, spec)


def write_summary(out_dir: Path, records: list[EpisodeRecord]) -> str:
    """Write summary.parquet and summary.md into `out_dir`; return the markdown."""
    import pandas as pd

    rows = summarize(records)
    md = markdown(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / ".summary.parquet.tmp"
    pd.DataFrame(rows).to_parquet(tmp, index=False)
    os.replace(tmp, out_dir / "summary.parquet")
    write_atomic(out_dir / "summary.md", md)
    return md


def _hydra_callback_base():
    from hydra.experimental.callback import Callback

    return Callback


class SummaryCallback(_hydra_callback_base()):
    """Hydra callback: when a multirun ends, write summary.parquet and summary.md in the sweep dir."""

    def on_multirun_end(self, config, **kwargs: Any) -> None:
        """Summarize the episodes listed by the jobs of this sweep (skipped ones included); a dry run has none."""
        if config.get("dry_run"):
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        records = manifest_records(sweep_dir)
        md = write_summary(sweep_dir, records)
        print(f"\nSummary of {len(records)} episodes ({sweep_dir / 'summary.md'}):\n\n{md}", flush=True)


def manifest_records(root: Path) -> list[EpisodeRecord]:
    """The intact records listed by the job manifests under `root`, one per key."""
    out: dict[str, EpisodeRecord] = {}
    for m in sorted(Path(root).rglob(MANIFEST)) if Path(root).is_dir() else []:
        for line in m.read_text().splitlines():
            rec = read_record(Path(line.strip())) if line.strip() else None
            if rec is not None:
                out.setdefault(rec.key or line, rec)
    return list(out.values())


# --- checks and command line --------------------------------------------------------------------
PROBER_UNRESOLVED = 0.95  # generation rule 7 seen from the episodes
READERS = ("reader-top1", "reader-latest", "reader-majority")  # sdebench.generation.readers.READERS
MEMORY_DELIVERIES = ("full", "memtool", "inject")  # the deliveries that show the task's memory
# The naive readers' least resolve@1 on recall tasks whose fact lives in memory, per reader and
# memory delivery (docs/hard.md, "Calibration": measured 32-63 % over variant 0 of the 21 recall
# families; the margin absorbs a regenerated family, not a broken reader).
READER_RECALL_MIN = 0.25


def reader_calibration(records: Iterable[EpisodeRecord]) -> list[dict[str, Any]]:
    """The naive readers' resolve@1 per tier, reader and delivery over the tasks whose fact lives in
    memory (H, K, F, X), errored episodes left out: on the recall tier, the calibration."""
    from sdebench.runs.rules import is_error

    mine = [r for r in records if r.identity.agent in READERS and r.identity.source in ("H", "K", "F", "X")
            and not is_error(r)]
    order = ("recall", "hard", *READERS, *summary.DELIVERIES)

    def rank(row: dict[str, Any]) -> tuple:
        return tuple((order.index(row[k]) if row[k] in order else len(order), row[k]) for k in ("tier", "agent", "delivery"))

    return [{k: row[k] for k in ("tier", "agent", "delivery", "episodes", "resolved_1", "resolve_1")}
            for row in sorted(summary.summarize(mine, ("tier", "agent", "delivery")), key=rank)]


def check_reference(records: Iterable[EpisodeRecord], max_interventions: int = DEFAULT_MAX_INTERVENTIONS) -> list[str]:
    """Problems with reference-agent outcomes: oracle resolves at once, conventional fails after
    exactly the cap, noop never resolves, the prober (no memory) stays unresolved in at least
    PROBER_UNRESOLVED of the episodes of every squashed or `none` cell, the naive readers as rule 8
    and their calibration say (`_reader_problem`, READER_RECALL_MIN), no episode errors (an errored
    episode is reported as such, never judged as an outcome)."""
    from sdebench.runs.rules import is_error, resolved_first

    problems = []
    records = list(records)
    for row in reader_calibration(records):
        if row["tier"] == "recall" and row["delivery"] in MEMORY_DELIVERIES and row["resolve_1"] < READER_RECALL_MIN:
            problems.append(f"delivery={row['delivery']} agent={row['agent']} recall tier: resolved at the first submit "
                            f"in {row['resolve_1']:.0%} of {row['episodes']} episodes with memory (at least "
                            f"{READER_RECALL_MIN:.0%} required: the reader does not read the memory it is shown)")
    cells: dict[tuple, list[bool]] = {}
    for r in records:
        i = r.identity
        if i.agent == "prober" and not is_error(r) and (i.delivery == "squashed" or i.source == "none"):
            cells.setdefault((i.delivery, i.source), []).append(r.outcome.resolved)
    for (delivery, source), outcomes in sorted(cells.items(), key=str):
        unresolved = outcomes.count(False) / len(outcomes)
        if unresolved < PROBER_UNRESOLVED:
            problems.append(f"delivery={delivery} source={source} agent=prober: unresolved in {unresolved:.0%} of "
                            f"{len(outcomes)} episodes (at least {PROBER_UNRESOLVED:.0%} required: the fact is searchable)")
    for r in records:
        where = f"{r.identity.task_id} delivery={r.identity.delivery} agent={r.identity.agent}"
        agent, resolved, n = r.identity.agent, r.outcome.resolved, r.outcome.interventions
        if is_error(r):
            problems.append(f"{where}: error: {r.outcome.error}")
        elif agent == "oracle" and not (resolved and n == 0):
            problems.append(f"{where}: expected resolved with 0 interventions, got resolved={resolved} interventions={n}")
        elif agent == "conventional" and (resolved or n != max_interventions):
            problems.append(f"{where}: expected unresolved after {max_interventions} interventions, got resolved={resolved} interventions={n}")
        elif agent == "noop" and resolved:
            problems.append(f"{where}: noop resolved")
        elif agent in READERS:
            problems += _reader_problem(r, where, resolved_first(r))
    return problems


def _reader_problem(r: EpisodeRecord, where: str, first: bool) -> list[str]:
    """What a naive reader's episode must show: on a hard task, no resolve at the first submit but
    under oracle (the fact sentence, given whatever the placement), where it resolves at once;
    anywhere, no resolve without memory (squashed, or a fact that lives nowhere and is not given)."""
    from sdebench.runs.rules import tier

    i, o = r.identity, r.outcome
    if i.delivery == "squashed" or (i.source == "none" and i.delivery != "oracle"):
        return [f"{where}: resolved without memory"] if o.resolved else []
    if tier(r) == "recall":
        return []
    if i.delivery == "oracle" and not first:
        return [f"{where}: hard task ({i.competency}): expected resolved at the first submit from the fact sentence, "
                f"got resolved={o.resolved} interventions={o.interventions}"]
    if i.delivery != "oracle" and first:
        return [f"{where}: hard task ({i.competency}): the naive reader resolved at the first submit "
                "(generation rule 8 says it must not)"]
    return []


FORMATS = ("md", "csv", "json")


def _table(rows: list[dict[str, Any]], keys: Sequence[str], fmt: str, standard: bool) -> str:
    """Summary rows as text: markdown (the cell layout for the standard grouping), CSV or JSON."""
    if fmt == "json":
        return json.dumps(rows, indent=1) + "\n"
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=[*keys, *SUMMARY_COLUMNS], lineterminator="\n")
        w.writeheader()
        w.writerows(summary.ordered(rows, keys))
        return buf.getvalue()
    return markdown(rows) if standard else group_markdown(rows, keys)


def main(argv: list[str] | None = None) -> int:
    """`sdebench results DIR... [--by KEYS] [--where KEY=VALUE]... [--format md|csv|json] [--check-reference]`:
    the summary of the episode records under DIRs. Exit 1 when no episode matches (or a reference check fails)."""
    import argparse

    from sdebench.runs import where as where_mod

    ap = argparse.ArgumentParser(prog="sdebench results", description=main.__doc__,
                                 epilog="KEY: a record field by its leaf name (agent, resolved, cost_usd) or "
                                        "section.leaf (identity.agent, outcome.stop_reason, delivery.inject_tokens, "
                                        "retrieval.retrieved), or kind, task_set, tier, competency (docs/analysis.md)")
    ap.add_argument("dirs", nargs="+", help="results, run or multirun dirs")
    ap.add_argument("--by", default=None, help="comma list of keys to group by (default: the cell, "
                    f"{','.join(GROUP)}); {', '.join(summary.NEVER_POOLED)} are always kept apart")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="keep episodes whose KEY is VALUE (KEY!=VALUE: is not; VALUE may be a comma list); repeatable, all must hold")
    ap.add_argument("--format", choices=FORMATS, default="md", help="md (default), csv or json")
    ap.add_argument("--check-reference", action="store_true", help="exit 1 unless reference agents behave as expected")
    ap.add_argument("--max-interventions", type=int, default=DEFAULT_MAX_INTERVENTIONS)
    args = ap.parse_args(argv)
    missing = [d for d in args.dirs if not Path(d).exists()]
    if missing:
        print(f"sdebench results: error: no such dir: {', '.join(missing)}", file=sys.stderr)
        return 2
    from sdebench.runs.rules import is_error

    try:
        conditions = where_mod.parse(args.where)
        by = GROUP if args.by is None else tuple(where_mod.check_key(k.strip(), "--by") for k in args.by.split(",")
                                                 if k.strip())
    except where_mod.FilterError as e:
        print(f"sdebench results: error: {e}", file=sys.stderr)
        return 2
    every = read_records(*args.dirs)
    records = where_mod.select(every, conditions)
    if not records:
        print(f"sdebench results: {where_mod.nothing(conditions, len(every), args.dirs)}", file=sys.stderr)
        return 1
    rows = summarize(records, by)
    text = _table(rows, summary.grouping(by), args.format, by == GROUP)
    if args.format != "md":
        sys.stdout.write(text)
        return 0
    errors = sum(is_error(r) for r in records)
    print(f"{len(records)} episodes" + (f", {errors} of them ended in error" if errors else "")
          + (f" ({where_mod.describe(conditions)})" if conditions else "") + "\n\n" + text)
    if args.check_reference:
        problems = check_reference(records, args.max_interventions)
        for p in problems:
            print(f"FAIL {p}", file=sys.stderr)
        if problems:
            return 1
        print("reference agents: all outcomes as expected")
    if rows := reader_calibration(records):
        print("\nnaive readers, resolve@1 over the tasks whose fact lives in memory (recall tier: the calibration, "
              f"at least {READER_RECALL_MIN:.0%} in full, memtool and inject; hard tier: 0 but oracle):")
        for row in rows:
            print(f"  {row['tier']:6} {row['agent']:15} {row['delivery']:8} {row['resolved_1']}/{row['episodes']} "
                  f"({row['resolve_1']:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
