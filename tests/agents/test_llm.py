"""The LLM agent driven through litellm over real HTTP against the scripted test model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sdebench.agents.base import AgentContext, Limits, ToolResult
from sdebench.agents.llm import ConfigError, LLMAgent, parse_arguments
from sdebench.runs.trajectory import Trajectory, read
from sdebench.tasks.record import Task
from sdebench.tasks.record import Tests as TaskTests
from sdebench.testing import testmodel

CONF = Path(__file__).resolve().parents[2] / "conf"
KEY_ENV = "SDEBENCH_TEST_LLM_KEY"
FAKE_KEY = "sk-test-PLANTED-5f1c0ffee"
PRICES = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text())


class FileToolbox:
    """A small real toolbox over a tmp dir: read/write/edit files and submit."""

    SCHEMAS = {
        "read_file": {"path": "string"},
        "write_file": {"path": "string", "content": "string"},
        "edit_file": {"path": "string", "old_string": "string", "new_string": "string"},
        "submit": {},
    }

    def __init__(self, root: Path):
        self.root = root
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return list(self.SCHEMAS)

    def schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": f"{n} tool",
                    "parameters": {
                        "type": "object",
                        "properties": {k: {"type": t} for k, t in p.items()},
                        "required": list(p),
                    },
                },
            }
            for n, p in self.SCHEMAS.items()
        ]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        try:
            if name == "submit":
                return ToolResult(name, "submitted", submitted=True)
            path = self.root / arguments["path"]
            if name == "read_file":
                return ToolResult(name, path.read_text())
            if name == "write_file":
                path.write_text(arguments["content"])
                return ToolResult(name, "ok")
            text = path.read_text()
            if text.count(arguments["old_string"]) != 1:
                return ToolResult(name, "Error: old_string must occur exactly once", error=True)
            path.write_text(text.replace(arguments["old_string"], arguments["new_string"]))
            return ToolResult(name, "ok")
        except (OSError, KeyError) as e:
            return ToolResult(name, f"Error: {e}", error=True)


def _task() -> Task:
    return Task(
        id="demo-v0-0", family="demo", variant=0, source="K", bottleneck="knowledge-missing",
        statement="total() is off by one", fact="f", fact_tokens=("f",), conventional_guess="g",
        modules=1, commits=1, head_sha="0" * 40, tests=TaskTests(("t::a",), (), ()), memory_artifacts=(),
        test_files=(),
    )


def _cfg(api_base: str, **model: Any) -> dict[str, Any]:
    m = {"name": "scripted", "litellm_model": "openai/testmodel", "api_base": api_base, "api_key_env": KEY_ENV,
         "temperature": 0.0, "max_tokens": 256, "prices": dict(PRICES)}
    m.update(model)
    agent = _yaml(CONF / "agent" / "llm.yaml")
    agent["retry"] = {"max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "request_timeout_s": 5.0}
    return {"agent": agent, "model": m, "limits": {}}


def _cost(prompt: int, completion: int, cached: int = 0, write: int = 0, p: dict[str, float] = PRICES) -> float:
    """Hand computation: uncached input, cache reads, cache writes and output at per-million prices."""
    return (
        (prompt - cached - write) * p["input"] + cached * p["cache_read"] + write * p["cache_write"]
        + completion * p["output"]
    ) / 1e6


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


class Rig:
    """A scripted server plus an agent wired to a file toolbox."""

    def __init__(self, tmp: Path, steps: list[dict[str, Any]], limits: Limits | None = None, **model: Any):
        self.tmp = tmp
        (tmp / "ws").mkdir(exist_ok=True)
        (tmp / "ws" / "calc.py").write_text("def total(xs):\n    return sum(xs) + 1\n")
        self.ctx_server = testmodel.in_thread(testmodel.parse_script(steps))
        self.server = self.ctx_server.__enter__()
        self.url = testmodel.base_url(self.server)
        self.cfg = _cfg(self.url, **model)
        self.agent = LLMAgent.from_config(self.cfg)
        self.toolbox = FileToolbox(tmp / "ws")
        self.traj_path = tmp / "traj.jsonl"
        self.traj = Trajectory(self.traj_path)
        self.ctx = AgentContext(task=_task(), statement="total() is off by one", prompt_additions=["NOTE-ADDITION"],
                                toolbox=self.toolbox, trajectory=self.traj, limits=limits or Limits(),
                                started_at=time.monotonic())
        self.agent.start(self.ctx)

    def requests(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/requests") as r:
            return json.loads(r.read())

    def close(self) -> None:
        self.ctx_server.__exit__(None, None, None)


@pytest.fixture
def rig(tmp_path, key):
    made: list[Rig] = []

    def make(steps, limits=None, **model):
        r = Rig(tmp_path, steps, limits, **model)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


FIX = {"tool": "edit_file", "arguments": {"path": "calc.py", "old_string": "sum(xs) + 1", "new_string": "sum(xs)"}}
WRONG = {"tool": "edit_file", "arguments": {"path": "calc.py", "old_string": "sum(xs) + 1", "new_string": "sum(xs) - 1"}}
UNWRONG = {"tool": "edit_file", "arguments": {"path": "calc.py", "old_string": "sum(xs) - 1", "new_string": "sum(xs)"}}
SUBMIT = {"tool": "submit", "arguments": {}}


def _u(p: int, c: int, k: int = 0) -> dict[str, int]:
    return {"prompt_tokens": p, "completion_tokens": c, "cached_tokens": k}


def test_fix_at_once_accounts_every_token_and_cent(rig):
    r = rig([
        {"tool": "read_file", "arguments": {"path": "calc.py"}, "usage": _u(1200, 40)},
        {**FIX, "usage": _u(1500, 60, 1000)},
        {**SUBMIT, "usage": _u(1700, 10, 1400)},
    ])
    res = r.agent.run()
    assert res.stop_reason == "submitted" and res.turns == 3 and res.error is None
    assert (r.tmp / "ws" / "calc.py").read_text() == "def total(xs):\n    return sum(xs)\n"
    u = r.agent.usage
    assert (u.model_calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (3, 4400, 110, 2400)
    expected = _cost(1200, 40) + _cost(1500, 60, 1000) + _cost(1700, 10, 1400)
    assert u.cost_usd == pytest.approx(expected, rel=1e-12)
    assert u.format_errors == 0 and u.retries == 0 and u.model_s > 0
    # the conversation is linear: each request carries the whole history so far
    reqs = r.requests()
    assert [len(q["body"]["messages"]) for q in reqs] == [2, 4, 6]
    first = reqs[0]["body"]
    assert first["messages"][0]["role"] == "system" and "NOTE-ADDITION" in first["messages"][1]["content"]
    assert "total() is off by one" in first["messages"][1]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == set(FileToolbox.SCHEMAS)
    assert first["model"] == "testmodel" and first["max_tokens"] == 256 and "seed" not in first
    assert reqs[1]["body"]["messages"][3] == {"role": "tool", "tool_call_id": "call_1_0", "name": "read_file",
                                              "content": "def total(xs):\n    return sum(xs) + 1\n"}
    # the key went to the server and nowhere into the trajectory
    assert all(q["authorization"] == f"Bearer {FAKE_KEY}" for q in reqs)
    events = read(r.traj_path)
    calls = [e for e in events if e["kind"] == "model_call"]
    assert [c["cost_usd"] for c in calls] == pytest.approx([_cost(1200, 40), _cost(1500, 60, 1000), _cost(1700, 10, 1400)])
    assert calls[1]["cached_tokens"] == 1000 and calls[1]["cost_source"] == "configured"
    assert calls[1]["raw_usage"]["prompt_tokens_details"]["cached_tokens"] == 1000
    assert all(c["latency_s"] > 0 for c in calls)
    assert FAKE_KEY not in r.traj_path.read_text()
    assert events[-1]["kind"] == "agent_stop" and events[-1]["stop_reason"] == "submitted"


def test_feedback_continues_the_same_conversation(rig):
    r = rig([WRONG, SUBMIT, UNWRONG, SUBMIT])
    assert r.agent.run().stop_reason == "submitted"
    assert "sum(xs) - 1" in (r.tmp / "ws" / "calc.py").read_text()
    r.agent.feedback("FAILED tests/test_calc.py::test_total - assert 5 == 6")
    res = r.agent.run()
    assert res.stop_reason == "submitted" and res.turns == 2
    assert "sum(xs)\n" in (r.tmp / "ws" / "calc.py").read_text()
    reqs = r.requests()
    msgs = reqs[2]["body"]["messages"]
    assert msgs[-1]["role"] == "user" and "assert 5 == 6" in msgs[-1]["content"]
    assert msgs[:len(reqs[1]["body"]["messages"])] == reqs[1]["body"]["messages"]
    assert r.agent.usage.model_calls == 4


def test_never_submitting_hits_the_turn_limit(rig):
    r = rig([{"tool": "read_file", "arguments": {"path": "calc.py"}, "repeat": True}], limits=Limits(max_turns=4))
    res = r.agent.run()
    assert res.stop_reason == "max_turns" and res.turns == 4
    assert len(r.requests()) == 4
    # the budget is for the episode: a later run gets no more turns
    r.agent.feedback("still failing")
    assert r.agent.run().stop_reason == "max_turns" and len(r.requests()) == 4


def test_garbage_replies_end_after_three_format_errors_and_are_charged(rig):
    r = rig([
        {"garbage": True, "tool": "edit_file", "usage": _u(500, 20)},
        {"tool": "no_such_tool", "arguments": {}, "usage": _u(600, 20)},
        {"tool": "edit_file", "arguments": {"path": "calc.py"}, "usage": _u(700, 20)},
        SUBMIT,
    ])
    res = r.agent.run()
    assert res.stop_reason == "format_errors" and res.turns == 3
    assert r.agent.usage.format_errors == 3
    assert r.agent.usage.cost_usd == pytest.approx(_cost(500, 20) + _cost(600, 20) + _cost(700, 20))
    assert r.toolbox.calls == []
    reqs = r.requests()
    assert len(reqs) == 3
    corrective = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][-1]
    assert "not valid JSON" in corrective["content"]
    assert "no tool named 'no_such_tool'" in reqs[2]["body"]["messages"][-1]["content"]
    reasons = [e["reason"] for e in read(r.traj_path) if e["kind"] == "format_error"]
    assert reasons == ["bad_arguments", "unknown_tool", "bad_arguments"]


def test_a_good_reply_resets_the_format_error_count(rig):
    r = rig([{"text": "Let me think."}, {"garbage": True}, FIX, {"text": "done?"}, {"garbage": True}, SUBMIT])
    res = r.agent.run()
    assert res.stop_reason == "submitted" and r.agent.usage.format_errors == 4
    msgs = r.requests()[1]["body"]["messages"]
    assert msgs[-2] == {"role": "assistant", "content": "Let me think."}
    assert msgs[-1]["role"] == "user" and "did not call a tool" in msgs[-1]["content"]


def test_rate_limit_then_success_is_retried(rig):
    r = rig([{"error": 429}, {"error": 503}, FIX, SUBMIT])
    res = r.agent.run()
    assert res.stop_reason == "submitted" and res.turns == 2
    assert r.agent.usage.retries == 2 and r.agent.usage.model_calls == 2
    assert len(r.requests()) == 4
    retries = [e for e in read(r.traj_path) if e["kind"] == "retry"]
    assert [e["status"] for e in retries] == [429, 503]


def test_timeouts_are_retried(rig):
    r = rig([{**FIX, "delay_s": 1.5}, FIX, SUBMIT])
    r.agent.settings = type(r.agent.settings)(
        prompts=r.agent.settings.prompts, max_format_errors=3,
        retry=type(r.agent.settings.retry)(max_retries=2, backoff_base_s=0.01, backoff_max_s=0.01, request_timeout_s=0.5),
    )
    res = r.agent.run()
    assert res.stop_reason == "submitted" and r.agent.usage.retries == 1


def test_retries_give_up_with_an_error(rig):
    r = rig([{"error": 500, "repeat": True}])
    res = r.agent.run()
    assert res.stop_reason == "error" and "gave up after 3 retries" in res.error
    assert len(r.requests()) == 4 and r.agent.usage.model_calls == 0


@pytest.mark.parametrize("status", [400, 401])
def test_client_errors_end_the_run_without_retry(rig, status):
    r = rig([{"error": status, "message": f"bad request {FAKE_KEY}"}, SUBMIT])
    res = r.agent.run()
    assert res.stop_reason == "error" and "bad request" in res.error
    assert FAKE_KEY not in res.error and "[REDACTED]" in res.error
    assert len(r.requests()) == 1 and r.agent.usage.retries == 0


def test_cost_limit_stops_the_episode(rig):
    # each call costs 1000*3 + 100*15 = 4500 micro-dollars; the budget allows two, the third crosses it
    per_call = _cost(1000, 100)
    r = rig([{"tool": "read_file", "arguments": {"path": "calc.py"}, "usage": _u(1000, 100), "repeat": True}],
            limits=Limits(max_cost_usd=2.5 * per_call))
    res = r.agent.run()
    assert res.stop_reason == "max_cost" and res.turns == 3
    assert r.agent.usage.cost_usd == pytest.approx(3 * per_call)
    assert len(r.requests()) == 3


def test_wall_limit_stops_before_calling(rig):
    r = rig([SUBMIT], limits=Limits(max_wall_s=10))
    r.ctx.started_at = time.monotonic() - 11
    assert r.agent.run().stop_reason == "max_wall"
    assert r.requests() == []


def test_anthropic_cache_fields_are_accounted(rig):
    r = rig([{**SUBMIT, "usage": {**_u(2000, 50, 0), "cache_read_input_tokens": 1200, "cache_creation_input_tokens": 300}}])
    assert r.agent.run().stop_reason == "submitted"
    u = r.agent.usage
    assert (u.cached_tokens, u.cache_write_tokens) == (1200, 300)
    assert u.cost_usd == pytest.approx(_cost(2000, 50, 1200, 300))


def test_litellm_prices_a_model_it_knows(rig):
    import litellm

    r = rig([{**SUBMIT, "usage": _u(10_000, 1_000, 4_000)}], litellm_model="openai/gpt-4o-mini", prices=None)
    assert r.agent.pricing.mode == "litellm"
    assert r.agent.run().stop_reason == "submitted"
    info = litellm.model_cost["gpt-4o-mini"]
    hand = (6_000 * info["input_cost_per_token"] + 4_000 * info["cache_read_input_token_cost"]
            + 1_000 * info["output_cost_per_token"])
    assert r.agent.usage.cost_usd == pytest.approx(hand, rel=1e-9)
    call = next(e for e in read(r.traj_path) if e["kind"] == "model_call")
    assert call["cost_source"] == "litellm"


def test_from_config_rejects_an_unpriced_model(key):
    cfg = _cfg("http://127.0.0.1:9/v1", litellm_model="openai/unknown-model-xyz", prices={"input": None})
    with pytest.raises(ConfigError, match="has no price"):
        LLMAgent.from_config(cfg)
    agent = LLMAgent.from_config({**cfg, "cost_tracking": "ignore"})
    assert agent.pricing.mode == "unpriced"


def test_from_config_errors_are_one_line(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"env var {KEY_ENV}"):
        LLMAgent.from_config(_cfg("http://127.0.0.1:9/v1"))
    monkeypatch.setenv(KEY_ENV, "x")
    cfg = _cfg("http://127.0.0.1:9/v1")
    cfg["agent"]["prompts"]["instance"] = "{statment}"
    with pytest.raises(ConfigError, match="unknown field"):
        LLMAgent.from_config(cfg)
    with pytest.raises(ConfigError, match="litellm_model"):
        LLMAgent.from_config({**_cfg("x"), "model": {"name": "m"}})


def test_the_shipped_model_configs_load(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.setenv("SDEBENCH_TESTMODEL_KEY", "x")
    agent_cfg = _yaml(CONF / "agent" / "llm.yaml")
    modes = {}
    for name in ("openai", "anthropic", "local", "testmodel"):
        a = LLMAgent.from_config({"agent": agent_cfg, "model": _yaml(CONF / "model" / f"{name}.yaml")})
        modes[name] = a.pricing.mode
    assert modes == {"openai": "litellm", "anthropic": "litellm", "local": "configured", "testmodel": "configured"}


def test_parse_arguments():
    schema = {"properties": {"path": {}, "n": {}}, "required": ["path"]}
    assert parse_arguments('{"path": "a", "n": 2}', schema) == ({"path": "a", "n": 2}, None)
    assert parse_arguments("", {}) == ({}, None)
    assert parse_arguments('{"n": 1}', schema)[1] == "missing required argument(s) ['path']"
    assert "not valid JSON" in parse_arguments('{"path": ', schema)[1]
    assert parse_arguments("[1]", schema)[1] == "expected a JSON object, got list"


def test_importing_the_package_does_not_import_litellm():
    code = (
        "import sys, importlib\n"
        "mods = ['sdebench.agents', 'sdebench.agents.llm', 'sdebench.agents.accounting', 'sdebench.testing.testmodel']\n"
        "for m in ['sdebench.runs.run', 'sdebench.runs.episode', 'sdebench.agents.tools']:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if e.name != m: raise\n"
        "for m in mods: importlib.import_module(m)\n"
        "assert 'litellm' not in sys.modules, sorted(k for k in sys.modules if 'litellm' in k)[:5]\n"
        "print('clean')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "clean"


def test_calls_after_submit_in_the_same_reply_are_not_run(rig):
    r = rig([{"tool_calls": [{"name": "edit_file", "arguments": FIX["arguments"]}, {"name": "submit"},
                             {"name": "write_file", "arguments": {"path": "calc.py", "content": "broken"}}]},
             {"tool": "read_file", "arguments": {"path": "calc.py"}}])
    assert r.agent.run().stop_reason == "submitted"
    assert [c[0] for c in r.toolbox.calls] == ["edit_file", "submit"]
    assert (r.tmp / "ws" / "calc.py").read_text() == "def total(xs):\n    return sum(xs)\n"
    # every call id still gets an answer, so the conversation stays valid if it resumes
    r.agent.feedback("one more thing")
    assert r.agent.run().stop_reason == "error"  # the script then runs out: a 400
    tool_msgs = [m for m in r.requests()[1]["body"]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_1_0", "call_1_1", "call_1_2"]
    assert "not run" in tool_msgs[2]["content"]


def test_backoff_never_outlives_the_wall_budget(rig):
    r = rig([{"error": 503, "repeat": True}], limits=Limits(max_wall_s=1.0))
    r.agent.settings = type(r.agent.settings)(
        prompts=r.agent.settings.prompts, max_format_errors=3,
        retry=type(r.agent.settings.retry)(max_retries=10, backoff_base_s=5.0, backoff_max_s=5.0, request_timeout_s=5.0),
    )
    t0 = time.monotonic()
    assert r.agent.run().stop_reason == "max_wall"
    assert time.monotonic() - t0 < 1.0 and len(r.requests()) == 1


def test_an_unreachable_server_is_retried_then_reported(tmp_path, key):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = LLMAgent.from_config(_cfg(f"http://127.0.0.1:{port}/v1"))
    ctx = AgentContext(task=_task(), statement="s", prompt_additions=[], toolbox=FileToolbox(tmp_path),
                       trajectory=Trajectory(tmp_path / "t.jsonl"), limits=Limits(), started_at=time.monotonic())
    agent.start(ctx)
    res = agent.run()
    assert res.stop_reason == "error" and "gave up after 3 retries" in res.error and "Connection" in res.error
    assert agent.usage.retries == 3 and agent.usage.model_calls == 0


def test_the_episode_seed_is_sent_when_configured(rig):
    r = rig([SUBMIT], send_seed=True)
    r.ctx.seed = 7
    assert r.agent.run().stop_reason == "submitted"
    assert r.requests()[0]["body"]["seed"] == 7
