"""`python -m sdebench.report`: a static HTML report of a sweep, or FINDINGS.md.

    python -m sdebench.report RESULTS_DIR [RESULTS_DIR ...] [--out DIR]
    python -m sdebench.report --findings [--reference DIR] [--llm DIR] [--out FINDINGS.md]

The HTML report is `DIR/index.html` (tables, plots as data URIs) and `DIR/episodes/<key>.html`,
one page per episode with its trajectory (tool calls and outputs, messages, grades with their
feedback, the final diff). Pages load nothing from outside: no scripts, styles inline, every
record- or agent-provided string HTML-escaped.

FINDINGS.md is computed from committed results only (a reference sweep and optionally an LLM
sweep), so regenerating it from the same files gives the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from sdebench.agents import trajectory as traj_mod
from sdebench.analysis import matrix, runinfo
from sdebench.analysis import paired as paired_stats
from sdebench.analysis import retrieval as retrieval_analysis
from sdebench.analysis import tables as analysis
from sdebench.analysis.htmltable import esc, table
from sdebench.runs import results
from sdebench.runs.record import EpisodeRecord
from sdebench.runs.rules import is_error

STYLE = """*{box-sizing:border-box}body{font-family:sans-serif;font-size:15px;margin:1.5em auto;padding:0 1em;max-width:1200px}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em}h3{font-size:1.05em;margin:1.2em 0 .3em}
.scroll{max-width:100%;overflow-x:auto;margin:.5em 0 1.5em}table{border-collapse:collapse}
caption{caption-side:bottom;text-align:left;font-size:12px;color:#555;padding-top:3px}
td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px;text-align:left;vertical-align:top}th{background:#eee}
.matrix td{white-space:nowrap;text-align:right}.matrix th{white-space:nowrap}.pair{display:flex;flex-wrap:wrap;gap:0 2em}
.pair .scroll{margin-bottom:.5em}.ci{color:#444}.err{color:#a00}
dl.meta{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 1em;font-size:13px;margin:0 0 1em}
dl.meta dt{font-weight:bold}dl.meta dd{margin:0;overflow-wrap:anywhere}
@media (max-width:600px){body{padding:0 .5em}dl.meta{grid-template-columns:minmax(0,1fr)}dl.meta dd{margin-bottom:3px}}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;word-break:break-word;font-size:12px;max-height:40em;overflow:auto}
.ev{border-left:3px solid #99c;padding-left:8px;margin:8px 0}.ok{color:#070}.bad{color:#a00}img{max-width:100%;height:auto}
p,li{overflow-wrap:anywhere}.note{font-size:13px;color:#333;font-weight:normal}"""
REFERENCE = Path("experiments/reference")


def page(title: str, body: str) -> str:
    """A whole self-contained HTML page."""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def img(path: Path, alt: str) -> str:
    """An <img> with the PNG at `path` embedded as a data URI."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def episode_name(rec: EpisodeRecord) -> str:
    """The file name of an episode's page."""
    i = rec.identity
    if rec.key:
        return f"{results._safe(rec.key)}.html"
    return f"{results._safe(i.task_id)}__{results._safe(i.delivery)}__{results._safe(i.agent)}__s{i.seed}.html"


def find_trajectory(rec: EpisodeRecord, dirs: list[Path]) -> Path | None:
    """The trajectory file of a record: its stored path, else beside the record under one of `dirs`."""
    if rec.storage.trajectory and Path(rec.storage.trajectory).is_file():
        return Path(rec.storage.trajectory)
    if rec.key:
        for d in dirs:
            p = results.trajectory_path(results.record_path(d, rec.identity, rec.key))
            if p.is_file():
                return p
    return None


def _arguments(args: Any) -> str:
    """Tool arguments as text: one `name: value` per argument, multi-line strings kept as written."""
    if not isinstance(args, dict):
        return json.dumps(args, indent=1, ensure_ascii=False, default=str)
    parts = []
    for k, v in args.items():
        if isinstance(v, str) and "\n" in v:
            parts.append(f"{k}:\n{v}")
        else:
            parts.append(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)}")
    return "\n".join(parts)


def render_event(ev: dict[str, Any]) -> str:
    """One trajectory event as HTML."""
    kind = ev.get("kind")
    head = f"<b>#{esc(ev.get('i'))} {esc(kind)}</b>"
    if kind == "tool":
        state = ' <span class="bad">error</span>' if ev.get("error") else ""
        args = _arguments(ev.get("arguments"))
        return (f'<div class="ev">{head} <code>{esc(ev.get("name"))}</code>{state}'
                f"<pre>{esc(args)}</pre><pre>{esc(ev.get('output'))}</pre></div>")
    if kind == "grade":
        tests = pd.DataFrame(ev.get("tests") or [], columns=["id", "group", "outcome", "message"])
        verdict = '<span class="ok">resolved</span>' if ev.get("resolved") else '<span class="bad">unresolved</span>'
        return (f'<div class="ev">{head} {verdict}{table(tests)}<p>feedback:</p>'
                f"<pre>{esc(ev.get('feedback'))}</pre></div>")
    if kind == "feedback":
        return f'<div class="ev">{head} (intervention {esc(ev.get("intervention"))})<pre>{esc(ev.get("text"))}</pre></div>'
    if kind == "model_call" and isinstance(ev.get("message"), dict):
        msg = ev["message"]
        calls = "\n".join(f"-> {c.get('function', {}).get('name')}({c.get('function', {}).get('arguments')})"
                          for c in msg.get("tool_calls") or [] if isinstance(c, dict))
        cost = f" cost ${float(ev.get('cost_usd') or 0):.4f}" if "cost_usd" in ev else ""
        return (f'<div class="ev">{head} turn {esc(ev.get("turn"))}{esc(cost)}'
                f"<pre>{esc(msg.get('content') or '')}</pre><pre>{esc(calls)}</pre></div>")
    if kind in ("message", "assistant", "user", "system"):
        content = ev.get("content") if "content" in ev else ev.get("text")
        if not isinstance(content, str):
            content = json.dumps(content, indent=1, ensure_ascii=False, default=str)
        return f'<div class="ev">{head} {esc(ev.get("role", ""))}<pre>{esc(content)}</pre></div>'
    rest = {k: v for k, v in ev.items() if k not in ("i", "t", "kind")}
    return f'<div class="ev">{head}<pre>{esc(json.dumps(rest, indent=1, ensure_ascii=False, default=str))}</pre></div>'


def episode_page(rec: EpisodeRecord, events: list[dict[str, Any]] | None) -> str:
    """The HTML page of one episode."""
    i = rec.identity
    title = f"{i.task_id} {i.delivery} {i.agent}/{i.model} seed {i.seed}"
    fields = ["task_id", "family", "variant", "source", "bottleneck", "competency", "delivery", "agent", "model", "seed",
              "resolved", "interventions", "stop_reason", "error", "turns", "cost_usd", "prompt_tokens",
              "completion_tokens", "wall_s", "tool_calls", "key"]
    flat = rec.flat()
    values = {f: flat[f] for f in fields}
    if rec.retrieval is not None:
        r = rec.retrieval
        values["retrieval"] = {"diagnosis": retrieval_analysis.diagnosis(r.to_dict(), rec.outcome.resolved, is_error(rec)),
                               "available": r.available,
                               "retrieved": r.retrieved, "best_rank": r.best_rank, "injected": r.injected,
                               "touched_by": r.touched_by, "fact_in_diff": r.fact_in_diff, "observed": r.observed}
    meta = pd.DataFrame([{"field": f, "value": json.dumps(v, default=str) if isinstance(v, dict) else v}
                         for f, v in values.items()])
    attempts = pd.DataFrame(flat["attempts"])
    if not attempts.empty:
        attempts = attempts.astype(str)
    body = [f'<p><a href="../index.html">back to the report</a></p><h1>{esc(title)}</h1>', table(meta),
            "<h2>Attempts</h2>", table(attempts), "<h2>Trajectory</h2>"]
    if events is None:
        body.append("<p><em>trajectory file not found</em></p>")
    else:
        body += [render_event(e) for e in events]
    body += ["<h2>Final diff</h2>", f"<pre>{esc(rec.outcome.final_diff)}</pre>"]
    return page(title, "\n".join(body))


def _records(dirs: list[Path]) -> list[EpisodeRecord]:
    recs = results.read_records(*dirs)
    return sorted(recs, key=lambda r: (r.identity.agent, r.identity.model, r.identity.task_id, r.identity.delivery,
                                       r.identity.seed, str(r.key)))


def build(dirs: list[Path], out: Path) -> Path:
    """Write the HTML report of the episodes under `dirs` into `out`; return the index path."""
    from sdebench.analysis import plots

    dirs = [Path(d) for d in dirs]
    recs = _records(dirs)
    out = Path(out)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    static, stream = analysis.split_streams(results.frame(recs)) if recs else (pd.DataFrame(), pd.DataFrame())
    df = analysis.prepare(static) if len(static) else pd.DataFrame()
    # what produced the results first, then the answer: the matrices; every other table after them
    meta = runinfo.summary(dirs, results.record_files(*dirs), recs)
    body = ["<h1>sdebench report</h1><dl class=\"meta\">"
            + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in meta) + "</dl>"]
    if len(df):
        body.append(matrix.section(df))
        note = analysis.gaps_note(df)
        body.append("<h2>Ablation gaps in resolve rate (95% bootstrap CI)</h2>"
                    + (f"<p>{esc(note)}</p>" if note else table(analysis.gaps(df), fold=True)))
        body.append(f"<h2>Paired comparisons of deliveries on the same tasks (resolve@1 a - b; exact McNemar p; "
                    f"paired bootstrap 95% CI over tasks, {analysis.N_BOOT} resamples, seed 0)</h2>"
                    + table(analysis.paired_comparisons(df), fold=True))
        with tempfile.TemporaryDirectory() as tmp:
            pngs = plots.write_all(df, Path(tmp))
            body.append("<h2>Plots</h2>" + "".join(f"<p>{img(p, p.stem)}</p>" for p in pngs))
        systems = analysis.memory_systems(df)
        if len(systems):
            body.append("<h2>Memory systems behind memtool: retrieved (the decisive item was among an answer's items), "
                        "resolve@1, load time, the systems' own model cost and the agent's</h2>" + table(systems, fold=True))
        body.append("<h2>Every cell: resolve@1, then resolve@cap and interventions (Wilson 95% intervals), "
                    "tokens and cost</h2>" + table(analysis.headline(df), fold=True))
        body.append("<h2>How many tasks an effect needs</h2>"
                    f"<p>{esc(paired_stats.FORMULA)}.</p>" + table(analysis.tasks_needed_table()))
        for name, t in (("Resolve rate and costs by source x delivery", analysis.by_cell(df)),
                        ("By tier and competency (recall: one memory item states the fact; hard: it must be "
                         "worked out of memory, docs/hard.md)", analysis.by_competency(df)),
                        ("Naive memory readers: resolve@1 over the tasks whose fact lives in memory (recall tier: "
                         "the calibration; hard tier: rule 8)", pd.DataFrame(results.reader_calibration(recs))),
                        ("By bottleneck", analysis.by_bottleneck(df)),
                        ("By family", analysis.by_family(df)),
                        ("Intervention counts", analysis.intervention_distribution(df)),
                        ("Reference-agent validity", analysis.validity(df)),
                        ("Retrieval of the decisive memory item: retrieved / used, and why failures failed",
                         retrieval_analysis.table(df))):
            body.append(f"<h2>{esc(name)}</h2>" + table(t, fold=True))
    if len(stream):
        # memory carried from earlier tasks of a stream: a different question, never pooled with the static cells
        body.append("<h2>Stream episodes (memory carried along a stream; not pooled with the tables above)</h2>"
                    + table(analysis.by_cell(analysis.prepare(stream)), fold=True))
    rows, links = [], {}
    for n, rec in enumerate(recs):
        name = episode_name(rec)
        tp = find_trajectory(rec, dirs)
        events = traj_mod.read(tp) if tp is not None else None
        (out / "episodes" / name).write_text(episode_page(rec, events), encoding="utf-8")
        links[n] = f"episodes/{name}"
        flat = rec.flat()
        rows.append({k: flat[k] for k in ("task_id", "delivery", "agent", "model", "seed", "resolved", "interventions",
                                          "stop_reason", "cost_usd")})
    body.append("<h2>Episodes</h2>" + table(pd.DataFrame(rows), links, fold=True))
    index = out / "index.html"
    index.write_text(page("sdebench report", "\n".join(body)), encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    """Command line: build the HTML report, or write FINDINGS.md with --findings."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.report", description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", type=Path, help="results, run or multirun dirs")
    ap.add_argument("--out", type=Path, help="report dir (default: report/), or the findings file")
    ap.add_argument("--findings", action="store_true", help="write FINDINGS.md from committed results")
    ap.add_argument("--reference", type=Path, default=REFERENCE, help="committed reference sweep dir (default: experiments/reference, from the current dir)")
    ap.add_argument("--llm", type=Path, default=None, help="committed LLM sweep dir (fills the LLM section)")
    a = ap.parse_args(argv)
    try:
        if a.findings:
            from sdebench.analysis import findings

            out = a.out or Path("FINDINGS.md")
            if not a.reference.is_dir():  # the committed sweep lives in a checkout, not in the package
                raise FileNotFoundError(f"no reference results at {a.reference.resolve()} (run in a checkout of "
                                        "sdebench, or pass --reference DIR, a dir of episode records)")
            text = findings.render(a.reference, a.llm)
            results.write_atomic(out, text)
            print(f"wrote {out}")
            return 0
        if not a.results:
            ap.error("give at least one RESULTS_DIR (or --findings)")
        missing = [str(d) for d in a.results if not d.exists()]
        if missing:
            raise FileNotFoundError(f"no such results dir: {', '.join(missing)}")
        index = build(a.results, a.out or Path("report"))
        print(f"wrote {index}")
        return 0
    except (OSError, ValueError) as e:
        print(f"sdebench.report: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
