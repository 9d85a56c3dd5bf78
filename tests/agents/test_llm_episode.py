"""Whole episodes of the LLM agent on a committed task: real toolbox, episode loop, grader and Hydra
app, with litellm talking over HTTP to the scripted test model server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sdebench.agents.trajectory import read
from sdebench.tasks.record import load
from sdebench.testing import testmodel

ROOT = Path(__file__).resolve().parents[2]
TASK = "billing-rounding-v0-K"
KEY_ENV = "SDEBENCH_TESTMODEL_KEY"
PLANTED = "sk-PLANTED-d41d8cd98f00b204e9800998ecf8427e"
PRICES = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}  # conf/model/testmodel.yaml

pytestmark = pytest.mark.slow


def patch_edits(patch: str) -> list[dict[str, Any]]:
    """One edit_file call per hunk of a unified diff (context + removed lines -> context + added lines)."""
    calls: list[dict[str, Any]] = []
    path = None
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if path is not None and (old or new):
            calls.append({"tool": "edit_file", "arguments": {"path": path, "old_string": "".join(old),
                                                             "new_string": "".join(new)}})

    for line in patch.splitlines(keepends=True):
        if line.startswith("+++ "):
            flush()
            old, new = [], []
            path = line[4:].strip().removeprefix("b/")
        elif line.startswith(("--- ", "diff ", "index ")):
            continue
        elif line.startswith("@@"):
            flush()
            old, new = [], []
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
    flush()
    return calls


def reverse(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The edits that undo `calls`."""
    return [{"tool": "edit_file", "arguments": {"path": c["arguments"]["path"], "old_string": c["arguments"]["new_string"],
                                                "new_string": c["arguments"]["old_string"]}} for c in reversed(calls)]


def usage(step: dict[str, Any], p: int, c: int, k: int = 0) -> dict[str, Any]:
    """`step` with scripted usage figures."""
    return {**step, "usage": {"prompt_tokens": p, "completion_tokens": c, "cached_tokens": k}}


def cost(p: int, c: int, k: int = 0) -> float:
    """Hand computation at the configured testmodel prices."""
    return ((p - k) * PRICES["input"] + k * PRICES["cache_read"] + c * PRICES["output"]) / 1e6


SUBMIT = {"tool": "submit", "arguments": {}}
READ = {"tool": "read_file", "arguments": {"path": "invoicer/money.py"}}


@pytest.fixture(scope="module")
def task():
    return load(ROOT / "tasks" / TASK)


@pytest.fixture(scope="module")
def server():
    """One scripted server for the module; each test posts its own script."""
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        yield testmodel.base_url(srv)


def _post_script(base: str, steps: list[dict[str, Any]]) -> None:
    req = urllib.request.Request(base.removesuffix("/v1") + "/script", data=json.dumps(steps).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def _requests(base: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(base.removesuffix("/v1") + "/requests", timeout=10) as r:
        return json.loads(r.read())


def _cfg(base: str, *overrides: str, sandbox: str = "unsafe_local") -> dict[str, Any]:
    """The real resolved run config for agent=llm model=testmodel (Hydra compose over conf/)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "agent=llm", "model=testmodel", f"model.api_base={base}", "delivery=squashed",
            f"sandbox={sandbox}", "agent.retry.backoff_base_s=0.01", "agent.retry.backoff_max_s=0.05",
            *overrides,
        ])
    return OmegaConf.to_container(cfg, resolve=True)


def _episode(task, base: str, steps: list[dict[str, Any]], tmp_path: Path, *overrides: str,
             sandbox: str = "unsafe_local") -> tuple[Any, list]:
    from sdebench.runs.assemble import run_episode
    from sdebench.sandbox import make_factory

    _post_script(base, steps)
    cfg = _cfg(base, *overrides, sandbox=sandbox)
    factory = make_factory(dict(cfg["sandbox"]))
    traj = tmp_path / "traj.jsonl"
    try:
        rec = run_episode(task, cfg, factory, trajectory_path=traj, work_root=tmp_path)
    finally:
        factory.cleanup()
    return rec, read(traj)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)


@pytest.mark.bwrap
def test_a_fix_that_resolves_at_once(task, server, tmp_path, key):
    fix = patch_edits(task.oracle_patch)
    steps = [usage(READ, 1500, 60)]
    steps += [usage(c, 2400, 120, 1024) for c in fix]
    steps += [usage(SUBMIT, 2600, 15, 2048)]
    rec, events = _episode(task, server, steps, tmp_path, sandbox="local")
    assert rec.outcome.error is None, rec.outcome.error
    assert rec.outcome.resolved is True and rec.outcome.stop_reason == "resolved" and rec.outcome.interventions == 0
    n = len(steps)
    assert rec.usage.turns == n and rec.usage.model_calls == n
    assert rec.usage.prompt_tokens == 1500 + 2400 * len(fix) + 2600
    assert rec.usage.completion_tokens == 60 + 120 * len(fix) + 15
    assert rec.usage.cached_tokens == 1024 * len(fix) + 2048
    hand = cost(1500, 60) + len(fix) * cost(2400, 120, 1024) + cost(2600, 15, 2048)
    assert rec.usage.cost_usd == pytest.approx(hand, rel=1e-12)
    assert "ROUND_DOWN" in rec.outcome.final_diff and 'Decimal("0.25")' in rec.outcome.final_diff  # the task's fact
    calls = [e for e in events if e["kind"] == "model_call"]
    assert len(calls) == n and sum(e["cost_usd"] for e in calls) == pytest.approx(hand, rel=1e-12)
    # the tool list the model saw is the real toolbox's, and the statement reached it
    first = _requests(server)[0]["body"]
    assert {"bash", "read_file", "edit_file", "submit"} <= {t["function"]["name"] for t in first["tools"]}
    assert task.statement.strip()[:40] in first["messages"][1]["content"]


def test_a_wrong_fix_is_corrected_after_feedback(task, server, tmp_path, key):
    wrong = patch_edits(task.conventional_patch)
    right = patch_edits(task.oracle_patch)
    steps = [*wrong, SUBMIT, *reverse(wrong), *right, SUBMIT]
    rec, events = _episode(task, server, steps, tmp_path)
    assert rec.outcome.error is None, rec.outcome.error
    assert rec.outcome.resolved is True and rec.outcome.interventions == 1
    assert [a.resolved for a in rec.attempts] == [False, True]
    fed = [e for e in events if e["kind"] == "feedback"]
    assert len(fed) == 1 and fed[0]["text"]
    # the feedback went to the model as a user message in the same conversation
    reqs = _requests(server)
    after = reqs[len(wrong) + 1]["body"]["messages"]
    assert after[-1]["role"] == "user" and fed[0]["text"].strip()[:60] in after[-1]["content"]
    assert len(after) > len(reqs[len(wrong)]["body"]["messages"])


def test_a_model_that_never_submits_hits_the_turn_limit(task, server, tmp_path, key):
    rec, _ = _episode(task, server, [{**READ, "repeat": True}], tmp_path, "limits.max_turns=4")
    assert rec.outcome.stop_reason == "max_turns" and rec.outcome.resolved is False
    assert rec.usage.turns == 4 and len(_requests(server)) == 4
    assert len(rec.attempts) == 1  # the workspace is still graded


def test_garbage_replies_end_the_episode_after_three_format_errors(task, server, tmp_path, key):
    steps = [usage({"garbage": True, "tool": "edit_file"}, 900, 30), usage({"text": "hmm"}, 1000, 30),
             usage({"tool": "no_such_tool", "arguments": {}}, 1100, 30), SUBMIT]
    rec, events = _episode(task, server, steps, tmp_path)
    assert rec.outcome.stop_reason == "format_errors" and rec.outcome.resolved is False
    assert rec.usage.cost_usd == pytest.approx(cost(900, 30) + cost(1000, 30) + cost(1100, 30), rel=1e-12)
    assert [e["reason"] for e in events if e["kind"] == "format_error"] == ["bad_arguments", "no_tool_call",
                                                                           "unknown_tool"]


def test_a_rate_limit_then_success_is_retried(task, server, tmp_path, key):
    steps = [{"error": 429}, {"error": 500}, *patch_edits(task.oracle_patch), SUBMIT]
    rec, events = _episode(task, server, steps, tmp_path)
    assert rec.outcome.resolved is True and rec.outcome.error is None
    assert [e["status"] for e in events if e["kind"] == "retry"] == [429, 500]
    assert len(_requests(server)) == len(steps)


def test_a_cost_limit_ends_the_episode(task, server, tmp_path, key):
    # 0.33 USD per call at the testmodel prices; after three (0.99 USD) the worst case of a fourth
    # (its prompt at the input price plus the model entry's 1024-token output cap at the output price) could cross
    # the 1 USD cap, so it is not made: the cap is never crossed
    step = usage({"tool": "bash", "arguments": {"command": "ls"}, "repeat": True}, 100_000, 2_000)
    rec, events = _episode(task, server, [step], tmp_path, "limits.max_cost_usd=1.0")
    assert rec.outcome.stop_reason == "max_cost" and rec.usage.turns == 3
    assert rec.usage.cost_usd == pytest.approx(3 * cost(100_000, 2_000), rel=1e-12) and rec.usage.cost_usd <= 1.0
    assert len(_requests(server)) == 3
    assert all(r["body"]["max_tokens"] == 1024 for r in _requests(server))  # the output cap the check assumed is sent
    limit = [e for e in events if e["kind"] == "limit"][-1]
    assert limit["spent_usd"] + limit["worst_case_usd"] > 1.0


@pytest.mark.parametrize("death", ["killed", "503 forever"])
def test_a_model_that_dies_mid_episode_is_an_error_whatever_the_workspace_holds(death, task, tmp_path, key):
    """The model reads, applies the right fix, then dies before it submits: its server process exits
    (later calls are refused) or answers 503 forever. The episode is an error (no outcome, rerun by
    retry_errors), not resolved by what the grade found, the failed calls are neither turns nor paid,
    and nothing prints it as unresolved."""
    from sdebench.runs.jobs import outcome
    from sdebench.runs.rules import is_error, outcome_label

    steps = [usage(READ, 1000, 20), *(usage(e, 1200, 40) for e in patch_edits(task.oracle_patch)),
             {"outage": "dead" if death == "killed" else 503}]
    if death == "killed":  # a real process that dies
        script = tmp_path / "script.json"
        script.write_text(json.dumps(steps))
        with testmodel.subprocess_server(script) as base:
            rec, events = _episode_at(task, base, tmp_path)
    else:
        with testmodel.in_thread(testmodel.parse_script(steps)) as srv:
            rec, events = _episode_at(task, testmodel.base_url(srv), tmp_path)
    answered = len(steps) - 1
    assert rec.outcome.stop_reason == "error" and "failed every call since some point" in rec.outcome.error, rec.outcome.error
    assert rec.outcome.resolved is False and rec.attempts[0].resolved is True  # the fix was there: still no outcome
    assert is_error(rec) and outcome_label(rec) == "error (no outcome)" and "unresolved" not in outcome(rec)
    assert rec.usage.turns == rec.usage.model_calls == answered  # the failed calls are no turns
    assert rec.usage.cost_usd == pytest.approx(cost(1000, 20) + (answered - 1) * cost(1200, 40), rel=1e-12)
    retries = [e for e in events if e["kind"] == "retry"]
    assert len(retries) == 6  # agent.retry.max_retries, then the probe
    assert [e["alive"] for e in events if e["kind"] == "model_probe"] == [False]
    assert "unresolved (error)" not in json.dumps(events)


def _episode_at(task, base: str, tmp_path: Path):
    from sdebench.runs.assemble import run_episode
    from sdebench.sandbox import make_factory

    cfg = _cfg(base)
    factory = make_factory(dict(cfg["sandbox"]))
    traj = tmp_path / "traj.jsonl"
    try:
        rec = run_episode(task, cfg, factory, trajectory_path=traj, work_root=tmp_path)
    finally:
        factory.cleanup()
    return rec, read(traj)


@pytest.mark.bwrap
def test_a_planted_key_reaches_no_output_file(task, tmp_path):
    """A full Hydra run with the key in the environment: results, trajectories, .hydra/* and logs stay clean.

    Two episodes (the H and K placements share their code and fix): one resolves, in the other the
    server answers 400 with the key echoed in its error message."""
    other = "billing-rounding-v0-H"
    assert load(ROOT / "tasks" / other).oracle_patch == task.oracle_patch
    script = tmp_path / "script.json"
    env_dump = {"tool": "bash", "arguments": {"command": "env; cat /proc/self/environ"}}  # the sandbox must not pass it on
    script.write_text(json.dumps([env_dump, *patch_edits(task.oracle_patch), SUBMIT,
                                  {"error": 400, "message": f"echo {PLANTED}"}]))
    env = {**os.environ, KEY_ENV: PLANTED, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = tmp_path / "out"
    with testmodel.subprocess_server(script) as base:
        proc = subprocess.run(
            [sys.executable, "-m", "sdebench.run", "agent=llm", "model=testmodel", f"model.api_base={base}",
             "delivery=squashed", f"select.ids=[{TASK},{other}]", f"tasks_dir={ROOT / 'tasks'}",
             f"results_dir={out / 'results'}", f"hydra.run.dir={out / 'hydra'}"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
        )
        # the second task's episode ends in the server's 400: an errored episode makes the exit status 1
        assert proc.returncode == 1 and "1 episode(s) ended in an error" in proc.stderr, proc.stderr[-3000:]
        assert PLANTED not in proc.stdout + proc.stderr
        with urllib.request.urlopen(base.removesuffix("/v1") + "/requests", timeout=10) as r:
            reqs = json.loads(r.read())
    assert reqs and all(q["authorization"] == f"Bearer {PLANTED}" for q in reqs)  # the key did go to the model
    assert "PATH=" in json.dumps(reqs[1]["body"]["messages"][-1])  # the env dump came back ...
    assert PLANTED not in json.dumps([q["body"] for q in reqs])  # ... without the key, in no request
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"config.yaml", "overrides.yaml", "hydra.yaml"} <= names
    assert sum(p.suffix == ".jsonl" for p in files) == 2 and any(p.suffix == ".log" for p in files)
    leaks = [str(p) for p in files if PLANTED.encode() in p.read_bytes()]
    assert leaks == []
    saved = (out / "hydra" / ".hydra" / "config.yaml").read_text()
    assert re.search(rf"api_key_env: {KEY_ENV}\b", saved)
    recs = [json.loads(p.read_text()) for p in files if p.suffix == ".json"]
    recs = [r for r in recs if isinstance(r, dict) and "schema_version" in r]
    assert sorted(r["outcome"]["stop_reason"] for r in recs) == ["error", "resolved"]
    assert any("[REDACTED]" in (r["outcome"].get("error") or "") for r in recs)


def test_a_noop_run_never_imports_litellm(tmp_path):
    argv = ["sdebench.runs.run", "agent=noop", "delivery=squashed", "sandbox=unsafe_local", f"select.ids={TASK}",
            f"tasks_dir={ROOT / 'tasks'}", f"results_dir={tmp_path / 'results'}", f"hydra.run.dir={tmp_path / 'hydra'}"]
    code = (
        "import runpy, sys\n"
        f"sys.argv = {argv!r}\n"
        "try:\n"
        "    runpy.run_module('sdebench.runs.run', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
        "print('clean')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("clean")
    recs = [json.loads(p.read_text()) for p in (tmp_path / "results").rglob("*.json")]
    assert [r["identity"]["agent"] for r in recs if "schema_version" in r] == ["noop"]
