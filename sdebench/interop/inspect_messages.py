"""An episode's trajectory as Inspect AI chat messages (sdebench.interop.inspect_log writes them).

The built-in agent logs its system and user messages and each reply (tool calls included); the
toolbox logs each tool's result. An installed agent's conversation is what its gateway saw: the
prompt it was given and each reply with its tool calls (their results stay inside the CLI). A
scripted agent logs only its tool calls. Fed-back grades are the user messages the agent logged,
or, for an agent that logs none, the episode's `feedback` events.
"""

from __future__ import annotations

import json
from typing import Any


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content, default=str)


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as Inspect's dict, and a parse error when the model's JSON was not an object."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as e:
        return {"raw": str(raw)}, f"arguments are not JSON: {e}"
    return (value, None) if isinstance(value, dict) else ({"value": value}, "arguments are not a JSON object")


def _call(call_id: str, name: str, raw: Any) -> dict[str, Any]:
    args, error = _arguments(raw)
    return {"id": call_id, "function": name, "arguments": args, "parse_error": error, "type": "function"}


class _Conversation:
    """Inspect chat messages rebuilt from trajectory events, in order."""

    def __init__(self, agent_logs_feedback: bool):
        self.messages: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []  # tool calls of the last assistant message without a result yet
        self.agent_logs_feedback = agent_logs_feedback
        self.synthetic = 0

    def add(self, role: str, content: str, **extra: Any) -> None:
        self.messages.append({"role": role, "content": content, **extra})

    def assistant(self, text: str, calls: list[dict[str, Any]], model: str | None) -> None:
        self.add("assistant", text, tool_calls=calls or None, model=model)
        self.pending = list(calls)

    def result(self, name: str, output: str, error: str | None, call_id: str | None = None,
               arguments: Any = None) -> None:
        """A tool's output: the answer to a pending call of that name, or a call of its own (a scripted agent)."""
        match = next((c for c in self.pending if (call_id and c["id"] == call_id) or (not call_id and c["function"] == name)),
                     None)
        if match is None:
            self.synthetic += 1
            match = _call(f"call_{self.synthetic}", name, arguments)
            self.assistant("", [match], None)
        self.pending.remove(match)
        err = {"type": "parsing" if error == "parsing" else "unknown", "message": output} if error else None
        self.add("tool", output, tool_call_id=match["id"], function=name, error=err)

    def event(self, e: dict[str, Any], model: str) -> None:
        kind = e.get("kind")
        if kind == "message":
            if e.get("role") in ("system", "user", "assistant"):
                self.add(e["role"], _text(e.get("content")))
        elif kind == "agent_start" and e.get("prompt"):
            self.add("user", _text(e["prompt"]))
        elif kind == "model_call" and isinstance(e.get("message"), dict):  # the built-in agent's reply
            m = e["message"]
            calls = [_call(str(c.get("id") or f"call_{i}"), str((c.get("function") or {}).get("name", "")),
                           (c.get("function") or {}).get("arguments")) for i, c in enumerate(m.get("tool_calls") or [])]
            self.assistant(_text(m.get("content")), calls, model)
        elif kind == "model_call" and ("text" in e or "tool_calls" in e):  # an installed agent's reply, seen by the gateway
            calls = [_call(str(c.get("id") or f"call_{i}"), str(c.get("name", "")), c.get("arguments"))
                     for i, c in enumerate(e.get("tool_calls") or [])]
            self.assistant(_text(e.get("text")), calls, model)
        elif kind in ("tool", "tool_result"):
            self.result(str(e.get("name", "")), _text(e.get("output")), "unknown" if e.get("error") else None,
                        str(e["id"]) if e.get("id") else None, e.get("arguments"))
        elif kind == "format_error":
            text = _text(e.get("message"))
            tool = e.get("tool")
            if tool and any(c["function"] == tool for c in self.pending):
                self.result(str(tool), text, "parsing")
            else:
                self.add("user", text)
        elif kind == "feedback" and not self.agent_logs_feedback:
            self.add("user", _text(e.get("text")))


def messages(events: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """The conversation of an episode as Inspect chat messages (system, user, assistant with tool
    calls, tool results; fed-back grades as user messages)."""
    logs_feedback = any(e.get("kind") == "message" and e.get("feedback") for e in events)
    conv = _Conversation(logs_feedback)
    for e in events:
        conv.event(e, model)
    return conv.messages
