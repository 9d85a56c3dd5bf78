"""Trajectories as Inspect chat messages (sdebench.interop.inspect_messages); the built-in agent's
are checked on a real episode in tests/interop/test_inspect_log.py."""

from __future__ import annotations

from sdebench.interop import inspect_messages


def test_messages_from_an_installed_agents_trajectory():
    """An installed agent's conversation is what its gateway saw: the prompt, replies with tool calls
    (arguments as JSON text), the fed-back message it logged (the episode's `feedback` event not twice)."""
    events = [
        {"kind": "agent_start", "prompt": "Fix the bug."},
        {"kind": "model_call", "text": "Looking.", "tool_calls": [{"id": "t1", "name": "Bash", "arguments": '{"command": "ls"}'}]},
        {"kind": "model_call", "text": None, "tool_calls": [{"id": "t2", "name": "Edit", "arguments": "{not json"}]},
        {"kind": "grade", "resolved": False},
        {"kind": "feedback", "intervention": 1, "text": "raw"},
        {"kind": "message", "role": "user", "content": "Tests fail.", "feedback": True},
        {"kind": "model_call", "text": "Done.", "tool_calls": []},
    ]
    msgs = inspect_messages.messages(events, "m")
    assert [(m["role"], m["content"]) for m in msgs] == [("user", "Fix the bug."), ("assistant", "Looking."),
                                                        ("assistant", ""), ("user", "Tests fail."), ("assistant", "Done.")]
    assert msgs[1]["tool_calls"] == [{"id": "t1", "function": "Bash", "arguments": {"command": "ls"}, "parse_error": None,
                                      "type": "function"}]
    bad = msgs[2]["tool_calls"][0]
    assert bad["arguments"] == {"raw": "{not json"} and bad["parse_error"].startswith("arguments are not JSON")
    # a scripted agent logs no message: the episode's feedback event is the fed-back message
    scripted = inspect_messages.messages([{"kind": "tool", "name": "submit", "arguments": {}, "output": "ok", "error": False},
                                     {"kind": "feedback", "text": "Not resolved."}], "none")
    assert [m["role"] for m in scripted] == ["assistant", "tool", "user"] and scripted[2]["content"] == "Not resolved."
