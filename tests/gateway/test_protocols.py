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


def test_gemini_contents_become_chat_messages_in_order():
    req = P.decode_gemini({
        "systemInstruction": {"role": "user", "parts": [{"text": "sys"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "context"}, {"text": "fix it"}]},
            {"role": "model", "parts": [{"text": "thinking...", "thought": True}, {"text": "ok"},
                                        {"functionCall": {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}},
                                         "thoughtSignature": "sig"},
                                        {"functionCall": {"name": "read_file", "args": {"file_path": "a.py"}}}]},
            # a resumed Gemini CLI session repeats a response; the call without an id is matched by name
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a.py"}}},
                                       {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a.py"}}},
                                       {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}}]},
            {"role": "user", "parts": [{"text": "go on"}, {"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}],
        "tools": [{"functionDeclarations": [
            {"name": "run_shell_command", "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"name": "old_style", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}}}]},
            {"googleSearch": {}}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["run_shell_command"]}},
        "generationConfig": {"maxOutputTokens": 321, "temperature": 1}})
    assert [m["role"] for m in req.messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert req.messages[0]["content"] == "sys" and req.messages[1]["content"] == "context\nfix it"
    assistant = req.messages[2]
    assert assistant["content"] == "ok"  # the thought is not part of the reply
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "call_1_1"]
    assert assistant["tool_calls"][0]["function"] == {"name": "run_shell_command", "arguments": '{"command": "ls"}'}
    assert req.messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
    assert req.messages[4] == {"role": "tool", "tool_call_id": "call_1_1", "content": "Error: no such file"}
    assert req.messages[5]["content"] == "go on\n[file omitted]"
    assert [t["function"]["name"] for t in req.tools] == ["run_shell_command", "old_style"]
    assert req.tools[1]["function"]["parameters"] == {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert req.tool_choice == {"type": "function", "function": {"name": "run_shell_command"}}
    assert req.max_tokens == 321 and req.stream is False


def test_a_gemini_path_says_the_model_and_whether_it_streams():
    assert P.route_of("/v1beta/models/gemini-2.5-pro:streamGenerateContent") == P.Route(P.GEMINI, stream=True, model="gemini-2.5-pro")
    assert P.route_of("/v1/models/m:generateContent") == P.Route(P.GEMINI, stream=False, model="m")
    assert P.route_of("/v1beta/models/m:countTokens").count_tokens
    assert P.route_of("/v1beta/models/m:embedContent") is None and P.route_of("/v1beta/models/a/b:generateContent") is None
    assert P.route_of("/v1/chat/completions") == P.Route(P.CHAT) and P.route_of("/v1/messages/count_tokens").count_tokens
    stream = P.route_of("/v1beta/models/m:streamGenerateContent")
    assert P.query_problem(stream, "alt=sse") is None and "alt=sse" in P.query_problem(stream, "")
    assert P.query_problem(P.route_of("/v1/messages"), "") is None
    req = P.decode(stream, {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "stream": False})
    assert req.stream is True and req.model == "m"  # the path decides, not the body
    with pytest.raises(P.ProtocolError):
        P.decode_gemini({"contents": "hi"})
    with pytest.raises(P.ProtocolError):
        P.decode_gemini({"contents": [{"role": "robot", "parts": []}]})
    with pytest.raises(P.ProtocolError):
        P.decode_gemini({"contents": [{"role": "user", "parts": "hi"}]})


def test_gemini_replies_carry_call_ids_and_token_counts():
    r = _reply("let me look", [("call_7", "run_shell_command", '{"command": "ls"}')])
    body = P.gemini_body(r)
    cand = body["candidates"][0]
    assert cand["finishReason"] == "STOP" and cand["content"]["role"] == "model"
    assert cand["content"]["parts"] == [{"text": "let me look"},
                                        {"functionCall": {"id": "call_7", "name": "run_shell_command", "args": {"command": "ls"}}}]
    # OpenAI's convention: the prompt count includes cached tokens
    assert body["usageMetadata"] == {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050,
                                     "cachedContentTokenCount": 300}
    req = P.decode(P.route_of("/v1beta/models/m:streamGenerateContent"), {"contents": []})
    out, events = P.encode(P.GEMINI, r, req)
    chunks = list(events)
    assert out is None and len(chunks) == 1 and json.loads(chunks[0].decode()[6:]) == {**body}
    assert P.gemini_body(_reply(None, finish="length"))["candidates"][0] == {
        "content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "MAX_TOKENS", "index": 0}
    assert P.error_body(P.GEMINI, 429, "slow down") == {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}


def _junk(rng, depth=0):
    """A random JSON value over the protocols' own field names (malformed request bodies)."""
    keys = ["contents", "parts", "role", "text", "functionCall", "functionResponse", "name", "args", "id", "response",
            "tools", "functionDeclarations", "parameters", "parametersJsonSchema", "type", "toolConfig",
            "functionCallingConfig", "mode", "allowedFunctionNames", "generationConfig", "maxOutputTokens",
            "systemInstruction", "thought", "inlineData", "messages", "content", "input", "tool_calls", "system",
            "tool_choice", "instructions", "function", "arguments", "tool_use_id", "stream_options"]
    r = rng.random()
    if depth > 4 or r < 0.3:
        return rng.choice([None, 1, -2.5, "x", True, "", [], {}])
    if r < 0.6:
        return [_junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(keys): _junk(rng, depth + 1) for _ in range(rng.randint(0, 4))}


@pytest.mark.parametrize("protocol", P.PROTOCOLS)
def test_a_malformed_body_of_any_shape_is_a_protocol_error_never_a_crash(protocol):
    import random

    rng = random.Random(protocol)
    field = {"gemini": "contents", "responses": "input"}.get(protocol, "messages")
    outcomes = {"decoded": 0, "refused": 0}
    for _ in range(5000):
        body = _junk(rng)
        if isinstance(body, dict) and rng.random() < 0.7:
            # items that get past the first checks (a known role), with junk inside
            body[field] = [{**(j if isinstance(j := _junk(rng, 1), dict) else {}),
                            "role": rng.choice(["user", "assistant", "system", "model"]),
                            rng.choice(["content", "parts", "type"]): _junk(rng, 2)} for _ in range(3)]
        try:  # anything but a ProtocolError fails the test
            P.decode(P.Route(protocol), body)
            outcomes["decoded"] += 1
        except P.ProtocolError:
            outcomes["refused"] += 1
    assert min(outcomes.values()) > 50, outcomes  # both paths were exercised
