"""`sdebench export inspect`: a real sweep's records as Inspect eval logs, checked as JSON here and
read back by inspect-ai's own `read_eval_log` in its peer virtualenv."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdebench.interop import export as export_cli
from sdebench.interop import inspect_log
from sdebench.runs import results
from tests.env.helpers import ROOT
from tests.interop import peers
from tests.interop.inspect_sweep import OTHER, TASK, build_sweep

READER = """
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
out = []
for info in list_eval_logs(sys.argv[1]):
    log = read_eval_log(info)
    out.append({
        "task": log.eval.task, "model": log.eval.model, "solver": log.eval.solver, "status": log.status,
        "version": log.version, "epochs": log.eval.config.epochs,
        "scores": {s.name: [s.metrics["mean"].value, s.scored_samples, s.unscored_samples] for s in log.results.scores},
        "samples": [{
            "id": s.id, "epoch": s.epoch, "error": s.error.message if s.error else None,
            "scores": {k: v.value for k, v in (s.scores or {}).items()},
            "metadata": s.metadata, "usage": {k: u.model_dump() for k, u in s.model_usage.items()},
            "messages": [{"role": m.role, "text": m.text,
                          "calls": [[c.function, c.arguments] for c in (getattr(m, "tool_calls", None) or [])],
                          "call_id": getattr(m, "tool_call_id", None)} for m in s.messages],
        } for s in log.samples],
    })
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, Path]:
    """The sweep's results dir, and its logs as written by the command line."""
    root = tmp_path_factory.mktemp("inspectlog")
    res = build_sweep(root)
    out = root / "logs"
    p = subprocess.run([sys.executable, "-m", "sdebench", "export", "inspect", str(res), "--out", str(out)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"wrote 3 Inspect log(s) (5 samples, 1 with an error) to {out}; skipped 0 file(s)"
    return res, out


def logs_by_solver(out: Path) -> dict[str, dict]:
    return {(d := json.loads(p.read_text()))["eval"]["solver"]: d for p in sorted(out.glob("*.json"))}


@pytest.mark.slow
def test_one_log_per_cell_one_sample_per_episode(sweep):
    res, out = sweep
    logs = logs_by_solver(out)
    assert set(logs) == {"oracle", "noop", "llm"}
    for name in out.glob("*.json"):  # the names Inspect lists logs by: <created>_<task>_<id>
        created, task, eval_id = name.stem.split("_")
        assert task == "sdebench-squashed" and len(eval_id) == 22
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\+00-00", created), created
    oracle = logs["oracle"]
    assert oracle["version"] == inspect_log.LOG_VERSION and oracle["eval"]["model"] == "none"
    assert [(s["id"], s["epoch"]) for s in oracle["samples"]] == [(OTHER, 1), (TASK, 1)]
    assert [(s["id"], s["epoch"]) for s in logs["noop"]["samples"]] == [(TASK, 1), (TASK, 2)]
    assert logs["noop"]["eval"]["config"]["epochs"] == 2 and oracle["eval"]["config"]["epochs"] == 1
    errored = oracle["samples"][0]
    assert errored["scores"] is None and "declares no capabilities" in errored["error"]["message"]
    assert errored["metadata"]["outcome"] == "error (no outcome)"
    # rates over the episodes with an outcome, as every sdebench table counts them
    resolved = next(s for s in oracle["results"]["scores"] if s["name"] == "resolved")
    assert resolved["metrics"]["mean"]["value"] == 1.0 and resolved["scored_samples"] == 1
    assert resolved["unscored_samples"] == 1 and oracle["results"]["completed_samples"] == 1
    recs = {(r.identity.agent, r.identity.seed, r.identity.task_id): SimpleNamespace(**r.flat())
            for r in results.read_records(res)}
    llm = logs["llm"]["samples"][0]
    rec = recs[("llm", 0, TASK)]
    assert llm["scores"]["resolved"]["value"] == 1.0 and llm["scores"]["resolved_first"]["value"] == 0.0
    assert llm["scores"]["interventions"]["value"] == 1 and llm["scores"]["resolved"]["answer"] == rec.final_diff
    assert llm["model_usage"] == {"testmodel": {"input_tokens": rec.prompt_tokens, "output_tokens": rec.completion_tokens,
                                                "total_tokens": rec.prompt_tokens + rec.completion_tokens,
                                                "input_tokens_cache_read": rec.cached_tokens,
                                                "total_cost": rec.cost_usd}}
    meta = llm["metadata"]
    assert (meta["family"], meta["source"], meta["delivery"], meta["agent"], meta["tier"], meta["competency"],
            meta["outcome"]) == ("mini-pricing", "K", "squashed", "llm", "recall", "recall", "resolved")
    noop = logs["noop"]["samples"][1]
    assert noop["scores"]["resolved"]["value"] == 0.0 and noop["scores"]["interventions"]["value"] == 1
    assert noop["metadata"]["outcome"] == "unresolved (max_interventions)"
    # the same records export to the same bytes
    again = inspect_log.export([res], out.parent / "again")
    assert [p.read_bytes() for p in sorted(again.logs)] == [p.read_bytes() for p in sorted(out.glob("*.json"))]


@pytest.mark.slow
@pytest.mark.peers
def test_inspect_reads_every_sample(sweep, tmp_path):
    """inspect-ai's own reader loads every log and sample with its scores, messages, tool calls, metadata and usage."""
    res, out = sweep
    (tmp_path / "reader.py").write_text(READER)
    p = peers.run([str(peers.bin_dir("inspect") / "python"), str(tmp_path / "reader.py"), str(out)], tmp_path,
                  timeout=300, HOME=str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    logs = {d["solver"]: d for d in json.loads(p.stdout)}
    assert set(logs) == {"oracle", "noop", "llm"}
    assert all(d["status"] == "success" and d["task"] == "sdebench-squashed" for d in logs.values())
    assert logs["oracle"]["scores"]["resolved"] == [1.0, 1, 1] and logs["noop"]["epochs"] == 2
    assert logs["noop"]["scores"]["interventions"] == [1.0, 2, 0]
    assert logs["llm"]["scores"] == {"resolved": [1.0, 1, 0], "resolved_first": [0.0, 1, 0], "interventions": [1.0, 1, 0]}
    records = {(r.identity.agent, r.identity.task_id, r.identity.seed): SimpleNamespace(**r.flat())
               for r in results.read_records(res)}
    seen = 0
    for d in logs.values():
        for s in d["samples"]:
            rec = records[(d["solver"], s["id"], s["epoch"] - 1)]
            seen += 1
            assert s["metadata"]["outcome"] == ("error (no outcome)" if rec.stop_reason == "error" else
                                                "resolved" if rec.resolved else f"unresolved ({rec.stop_reason})")
            for k in ("family", "source", "delivery", "agent", "competency"):
                assert s["metadata"][k] == getattr(rec, k)
            assert s["metadata"]["tier"] == "recall"
            if rec.stop_reason == "error":
                assert s["error"] == rec.error and s["scores"] == {}
            else:
                assert s["error"] is None and s["scores"]["resolved"] == float(rec.resolved)
            assert s["usage"][rec.model]["input_tokens"] == rec.prompt_tokens
            assert s["usage"][rec.model]["total_cost"] == pytest.approx(rec.cost_usd)
    assert seen == len(records) == 5
    (llm,) = logs["llm"]["samples"]
    roles = [m["role"] for m in llm["messages"]]
    assert roles[:2] == ["system", "user"] and roles.count("user") == 2  # the instance, one fed-back grade
    calls = [c for m in llm["messages"] for c in m["calls"]]
    assert [c[0] for c in calls] == ["read_file", "write_file", "submit", "write_file", "submit"]
    assert calls[0][1] == {"path": "shop/pricing.py"} and "LOYALTY_RATE" in calls[1][1]["content"]
    results_of = [m for m in llm["messages"] if m["role"] == "tool"]
    assert len(results_of) == 5 and "LOYALTY_RATE" in results_of[0]["text"]  # read_file's output
    by_id = {c["call_id"] for c in results_of}
    assert len(by_id) == 5 and None not in by_id
    oracle_k = next(s for s in logs["oracle"]["samples"] if s["id"] == TASK)
    assert [c[0] for m in oracle_k["messages"] for c in m["calls"]] == ["edit_file", "submit"]


def test_cli_bad_input(tmp_path, capsys):
    assert export_cli.main(["inspect", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "no results dir or record at" in capsys.readouterr().err
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "junk.json").write_text("{}")
    assert export_cli.main(["inspect", str(tmp_path / "res"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "skipped" in err and "junk.json" in err and "nothing exported" in err and not (tmp_path / "o").exists()
