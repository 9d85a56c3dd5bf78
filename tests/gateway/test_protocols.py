"""Decoding each protocol into chat completions and encoding replies back."""

from __future__ import annotations

import json

import pytest

from sdebench.agents.accounting import TokenCounts
from sdebench.gateway import protocols as P


def _reply(text=None, calls=(), finish="tool_calls"):
    return P.Reply(text, [P.ToolCall(*c) for c in calls], finish, TokenCounts(1000, 50, 300, 100), "m", id="x")


def test_anthropic_turns_become_chat_messages_in_order():
    req = P.decode_anthropic({"model": "m", "max_tokens": 10, "system": [{"type": "text", "text": "sys"}], "stream": True,
                              "messages": [
                                  {"role": "user", "content": "fix it"},
                                  {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                                                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
                                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.py"}]},
                                                               {"type": "text", "text": "go on"}]},
                                  {"role": "system", "content": "context"}],
                              "tools": [{"name": "Bash", "description": "d", "input_schema": {"type": "object"}}],
                              "tool_choice": {"type": "any"}})
    roles = [m["role"] for m in req.messages]
    assert roles == ["system", "user", "assistant", "tool", "user", "system"]
    assert req.messages[2]["tool_calls"][0]["function"] == {"name": "Bash", "arguments": '{"command": "ls"}'}
    assert req.messages[3] == {"role": "tool", "tool_call_id": "t1", "content": "a.py"}
    assert req.tools[0]["function"]["name"] == "Bash" and req.tool_choice == "required" and req.stream


def test_a_malformed_request_is_a_protocol_error():
    with pytest.raises(P.ProtocolError):
        P.decode_anthropic({"messages": "no"})
    with pytest.raises(P.ProtocolError):
        P.decode_anthropic({"messages": [{"role": "robot", "content": "x"}]})
    with pytest.raises(P.ProtocolError):
        P.decode_responses({"input": 3})


def test_responses_custom_and_namespaced_tools_round_trip():
    req = P.decode_responses({"input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "function_call", "call_id": "c1", "name": "memory_search", "namespace": "mcp__memory", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "hits"}],
        "tools": [{"type": "custom", "name": "apply_patch", "description": "patch", "format": {"definition": "G"}},
                  {"type": "namespace", "name": "mcp__memory", "tools": [{"type": "function", "name": "memory_search", "parameters": {}}]}]})
    assert [m["role"] for m in req.messages] == ["system", "assistant", "tool"]
    assert req.messages[1]["tool_calls"][0]["function"]["name"] == "mcp__memory__memory_search"
    assert {t["function"]["name"] for t in req.tools} == {"apply_patch", "mcp__memory__memory_search"}
    r = _reply(calls=[("c2", "apply_patch", json.dumps({"input": "*** Begin Patch"})), ("c3", "mcp__memory__memory_search", "{}")])
    out = P.responses_body(r, req.custom_tools, req.namespaced)["output"]
    assert out[0] == {**out[0], "type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch"}
    assert (out[1]["namespace"], out[1]["name"]) == ("mcp__memory", "memory_search")


def test_usage_follows_each_protocols_convention():
    r = _reply(text="hi")
    assert P.anthropic_body(r)["usage"] == {"input_tokens": 600, "output_tokens": 50, "cache_read_input_tokens": 300,
                                            "cache_creation_input_tokens": 100}
    assert P.chat_body(r)["usage"]["prompt_tokens"] == 1000
    assert P.responses_body(r)["usage"]["input_tokens"] == 1000


def test_streams_carry_the_whole_reply():
    r = _reply(text="thinking", calls=[("c1", "Bash", '{"command": "ls"}')])
    events = [json.loads(c.decode().split("data: ", 1)[1]) for c in P.anthropic_events(r)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert deltas[0]["text"] == "thinking" and json.loads(deltas[1]["partial_json"]) == {"command": "ls"}
    chunks = [c.decode() for c in P.chat_events(r, include_usage=True)]
    assert chunks[-1] == "data: [DONE]\n\n"
    resp = [json.loads(c.decode().split("data: ", 1)[1]) for c in P.responses_events(r)]
    assert resp[-1]["type"] == "response.completed" and [i["type"] for i in resp[-1]["response"]["output"]] == ["message", "function_call"]
