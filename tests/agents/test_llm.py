"""The LLM agent's loop, driven by the in-process scripted model client (no HTTP, no litellm).

The litellm client itself (request building, retries, pricing) is tested over real HTTP in
test_model.py; whole episodes through litellm and the HTTP test server in test_llm_episode.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sdebench.agents.base import AgentContext, Limits, ToolResult
from sdebench.agents.llm import AgentSettings, ConfigError, LLMAgent, parse_arguments
from sdebench.agents.trajectory import Trajectory, TrajectoryView, read
from sdebench.testing.scripted import PRICES, ScriptedClient

CONF = Path(__file__).resolve().parents[2] / "conf"
SECRET = "sk-test-PLANTED-5f1c0ffee"


class FileToolbox:
    """A small real toolbox over a tmp dir: read/write/edit files and submit."""

    logs_calls = False

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
            {"type": "function", "function": {"name": n, "description": f"{n} tool", "parameters": {
                "type": "object", "properties": {k: {"type": t} for k, t in p.items()}, "required": list(p)}}}
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


def _cost(prompt: int, completion: int, cached: int = 0, write: int = 0, p: dict[str, float] = PRICES) -> float:
    """Hand computation: uncached input, cache reads, cache writes and output at per-million prices."""
    return ((prompt - cached - write) * p["input"] + cached * p["cache_read"] + write * p["cache_write"]
            + completion * p["output"]) / 1e6


def settings(max_format_errors: int = 3) -> AgentSettings:
    agent = yaml.safe_load((CONF / "agent" / "llm.yaml").read_text())
    return AgentSettings.from_config({**agent, "max_format_errors": max_format_errors})


class Rig:
    """An agent on the scripted client, a file toolbox and a real trajectory file."""

    def __init__(self, tmp: Path, steps: list[dict[str, Any]], limits: Limits | None = None):
        self.tmp = tmp
        (tmp / "ws").mkdir(exist_ok=True)
        (tmp / "ws" / "calc.py").write_text(f"def total(xs):\n    return sum(xs) + 1  # {SECRET}\n")
        self.client = ScriptedClient(steps, secret=SECRET)
        self.agent = LLMAgent(settings(), self.client)
        self.toolbox = FileToolbox(tmp / "ws")
        self.traj_path = tmp / "traj.jsonl"
        self.ctx = AgentContext(statement="total() is off by one", prompt_additions=["NOTE-ADDITION"],
                                toolbox=self.toolbox, trajectory=TrajectoryView(Trajectory(self.traj_path)),
                                limits=limits or Limits(), started_at=time.monotonic())
        self.agent.start(self.ctx)

    def code(self) -> str:
        return (self.tmp / "ws" / "calc.py").read_text()


@pytest.fixture
def rig(tmp_path):
    return lambda steps, limits=None: Rig(tmp_path, steps, limits)


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
    assert r.code().startswith("def total(xs):\n    return sum(xs)  #")
    u = r.agent.usage
    assert (u.model_calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (3, 4400, 110, 2400)
    assert u.cost_usd == pytest.approx(_cost(1200, 40) + _cost(1500, 60, 1000) + _cost(1700, 10, 1400), rel=1e-12)
    assert u.format_errors == 0 and u.retries == 0
    # the conversation is linear: each call carries the whole history so far
    reqs = r.client.requests
    assert [len(q["messages"]) for q in reqs] == [2, 4, 6]
    first = reqs[0]
    assert first["messages"][0]["role"] == "system" and "NOTE-ADDITION" in first["messages"][1]["content"]
    assert "total() is off by one" in first["messages"][1]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == set(FileToolbox.SCHEMAS)
    assert reqs[1]["messages"][3] == {"role": "tool", "tool_call_id": "call_1_0", "name": "read_file",
                                      "content": r.code().replace("sum(xs)", "sum(xs) + 1")}
    events = read(r.traj_path)
    calls = [e for e in events if e["kind"] == "model_call"]
    assert [c["cost_usd"] for c in calls] == pytest.approx([_cost(1200, 40), _cost(1500, 60, 1000), _cost(1700, 10, 1400)])
    assert calls[1]["cached_tokens"] == 1000 and calls[1]["cost_source"] == "configured"
    assert calls[1]["raw_usage"]["prompt_tokens_details"]["cached_tokens"] == 1000
    # the client's secret reached the model in a tool result but no line of the trajectory
    assert SECRET in reqs[1]["messages"][3]["content"] and SECRET not in r.traj_path.read_text()
    assert events[-1]["kind"] == "agent_stop" and events[-1]["stop_reason"] == "submitted"


def test_feedback_continues_the_same_conversation(rig):
    r = rig([WRONG, SUBMIT, UNWRONG, SUBMIT])
    assert r.agent.run().stop_reason == "submitted"
    assert "sum(xs) - 1" in r.code()
    r.agent.feedback("FAILED tests/test_calc.py::test_total - assert 5 == 6")
    res = r.agent.run()
    assert res.stop_reason == "submitted" and res.turns == 2
    assert "sum(xs)  #" in r.code()
    reqs = r.client.requests
    msgs = reqs[2]["messages"]
    assert msgs[-1]["role"] == "user" and "assert 5 == 6" in msgs[-1]["content"]
    assert msgs[:len(reqs[1]["messages"])] == reqs[1]["messages"]
    assert r.agent.usage.model_calls == 4


def test_never_submitting_hits_the_turn_limit(rig):
    r = rig([{"tool": "read_file", "arguments": {"path": "calc.py"}, "repeat": True}], limits=Limits(max_turns=4))
    res = r.agent.run()
    assert res.stop_reason == "max_turns" and res.turns == 4 and len(r.client.requests) == 4
    # the budget is for the episode: a later run gets no more turns
    r.agent.feedback("still failing")
    assert r.agent.run().stop_reason == "max_turns" and len(r.client.requests) == 4


def test_garbage_replies_end_after_three_format_errors_and_are_charged(rig):
    r = rig([
        {"garbage": True, "tool": "edit_file", "usage": _u(500, 20)},
        {"tool": "no_such_tool", "arguments": {}, "usage": _u(600, 20)},
        {"tool": "edit_file", "arguments": {"path": "calc.py"}, "usage": _u(700, 20)},
        SUBMIT,
    ])
    res = r.agent.run()
    assert res.stop_reason == "format_errors" and res.turns == 3 and r.agent.usage.format_errors == 3
    assert r.agent.usage.cost_usd == pytest.approx(_cost(500, 20) + _cost(600, 20) + _cost(700, 20))
    assert r.toolbox.calls == []
    reqs = r.client.requests
    assert len(reqs) == 3
    corrective = [m for m in reqs[1]["messages"] if m["role"] == "tool"][-1]
    assert "not valid JSON" in corrective["content"]
    assert "no tool named 'no_such_tool'" in reqs[2]["messages"][-1]["content"]
    reasons = [e["reason"] for e in read(r.traj_path) if e["kind"] == "format_error"]
    assert reasons == ["bad_arguments", "unknown_tool", "bad_arguments"]


def test_a_good_reply_resets_the_format_error_count(rig):
    r = rig([{"text": "Let me think."}, {"garbage": True}, FIX, {"text": "done?"}, {"garbage": True}, SUBMIT])
    res = r.agent.run()
    assert res.stop_reason == "submitted" and r.agent.usage.format_errors == 4
    msgs = r.client.requests[1]["messages"]
    assert msgs[-2] == {"role": "assistant", "content": "Let me think."}
    assert msgs[-1]["role"] == "user" and "did not call a tool" in msgs[-1]["content"]


def test_a_failed_model_call_ends_the_run_with_the_secret_redacted(rig):
    r = rig([{"error": 401, "message": f"bad key {SECRET}"}, SUBMIT])
    res = r.agent.run()
    assert res.stop_reason == "error" and "bad key" in res.error
    assert SECRET not in res.error and "[REDACTED]" in res.error
    assert len(r.client.requests) == 1 and r.agent.usage.model_calls == 0 and res.turns == 0
    assert SECRET not in r.traj_path.read_text()


@pytest.mark.parametrize(("after", "stop"), [
    ({"outage": 503}, "error"),  # the model failed for good (and the probe too): no outcome
    ({"outage": "dead"}, "error"),  # gone: no answer at all
    ({"error": 503}, "agent_error"),  # this request failed, yet the model answers the probe: the agent's
    ({"error": 400, "message": "prompt is too long"}, "agent_error"),  # the model refused the agent's request
])
def test_a_failure_after_the_model_acted_is_an_error_only_if_the_model_is_dead(rig, after, stop):
    r = rig([WRONG, after])
    res = r.agent.run()
    assert res.stop_reason == stop and res.turns == 1 and r.agent.usage.model_calls == 1, res
    events = read(r.traj_path)
    probes = [e["alive"] for e in events if e["kind"] == "model_probe"]
    assert probes == ([] if "message" in after else [stop == "agent_error"])  # a request refused needs no probe
    assert ("failed every call since some point" in res.error) is (stop == "error")


def test_a_model_dead_before_it_acted_is_an_error(rig):
    r = rig([{"outage": 503}])
    res = r.agent.run()
    assert res.stop_reason == "error" and res.turns == 0 and "failed every call" in res.error


def test_cost_limit_stops_the_episode(rig):
    # each call costs 1000*3 + 100*15 = 4500 micro-dollars; the budget allows two, the third crosses it
    per_call = _cost(1000, 100)
    r = rig([{"tool": "read_file", "arguments": {"path": "calc.py"}, "usage": _u(1000, 100), "repeat": True}],
            limits=Limits(max_cost_usd=2.5 * per_call))
    res = r.agent.run()
    assert res.stop_reason == "max_cost" and res.turns == 3
    assert r.agent.usage.cost_usd == pytest.approx(3 * per_call) and len(r.client.requests) == 3


def test_wall_limit_stops_before_calling(rig):
    r = rig([SUBMIT], limits=Limits(max_wall_s=10))
    r.ctx.started_at = time.monotonic() - 11
    assert r.agent.run().stop_reason == "max_wall"
    assert r.client.requests == []


def test_anthropic_cache_fields_are_accounted(rig):
    r = rig([{**SUBMIT, "usage": {**_u(2000, 50, 0), "cache_read_input_tokens": 1200, "cache_creation_input_tokens": 300}}])
    assert r.agent.run().stop_reason == "submitted"
    u = r.agent.usage
    assert (u.cached_tokens, u.cache_write_tokens) == (1200, 300)
    assert u.cost_usd == pytest.approx(_cost(2000, 50, 1200, 300))


def test_calls_after_submit_in_the_same_reply_are_not_run(rig):
    r = rig([{"tool_calls": [{"name": "edit_file", "arguments": FIX["arguments"]}, {"name": "submit"},
                             {"name": "write_file", "arguments": {"path": "calc.py", "content": "broken"}}]},
             {"tool": "read_file", "arguments": {"path": "calc.py"}}])
    assert r.agent.run().stop_reason == "submitted"
    assert [c[0] for c in r.toolbox.calls] == ["edit_file", "submit"]
    assert "broken" not in r.code()
    # every call id still gets an answer, so the conversation stays valid if it resumes
    r.agent.feedback("one more thing")
    assert r.agent.run().stop_reason == "agent_error"  # the script then runs out: a request refused after the model acted
    tool_msgs = [m for m in r.client.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_1_0", "call_1_1", "call_1_2"]
    assert "not run" in tool_msgs[2]["content"]


def test_the_episode_seed_reaches_the_client(rig):
    r = rig([SUBMIT])
    r.ctx.seed = 7
    assert r.agent.run().stop_reason == "submitted"
    assert r.client.requests[0]["seed"] == 7


def test_a_toolbox_that_logs_its_calls_is_not_logged_twice(rig):
    r = rig([FIX, SUBMIT])
    r.toolbox.logs_calls = True
    assert r.agent.run().stop_reason == "submitted"
    assert not [e for e in read(r.traj_path) if e["kind"] == "tool_result"]
    plain = rig([FIX, SUBMIT])  # a fresh trajectory file
    assert plain.agent.run().stop_reason == "submitted"
    assert [e["name"] for e in read(plain.traj_path) if e["kind"] == "tool_result"] == ["edit_file", "submit"]


def test_agent_settings_errors_are_one_line():
    agent = yaml.safe_load((CONF / "agent" / "llm.yaml").read_text())
    agent["prompts"]["instance"] = "{statment}"
    with pytest.raises(ConfigError, match="unknown field"):
        AgentSettings.from_config(agent)
    with pytest.raises(ConfigError, match="max_format_errors must be at least 1"):
        settings(max_format_errors=0)


def test_parse_arguments():
    schema = {"properties": {"path": {}, "n": {}}, "required": ["path"]}
    assert parse_arguments('{"path": "a", "n": 2}', schema) == ({"path": "a", "n": 2}, None)
    assert parse_arguments("", {}) == ({}, None)
    assert parse_arguments('{"n": 1}', schema)[1] == "missing required argument(s) ['path']"
    assert "not valid JSON" in parse_arguments('{"path": ', schema)[1]
    assert parse_arguments("[1]", schema)[1] == "expected a JSON object, got list"
