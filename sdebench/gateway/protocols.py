"""The four wire protocols agents speak, translated to and from one chat-completions form.

Every request (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Gemini
generateContent) is decoded into a
`ChatRequest` (OpenAI chat messages and function tools), which is what `litellm.completion` takes;
every reply is one `Reply` (assistant text, tool calls, finish reason, token counts), encoded back
into the protocol the agent asked in, as one JSON body or as the server-sent events of a stream.

Token conventions on the wire: Anthropic's `input_tokens` excludes cache reads and writes (they are
`cache_read_input_tokens` and `cache_creation_input_tokens`); OpenAI's `prompt_tokens` and the
Responses API's `input_tokens` and Gemini's `promptTokenCount` include cached tokens. `Reply.tokens` uses the OpenAI convention
(`sdebench.agents.accounting.TokenCounts`).

The same encoders serve the gateway and the scripted test model, so both sides of a test speak
exactly what the real agent CLIs parse.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sdebench.agents.accounting import TokenCounts, prompt_chars
from sdebench.errors import AgentError

ANTHROPIC = "anthropic"
CHAT = "chat"
RESPONSES = "responses"
GEMINI = "gemini"
PROTOCOLS = (ANTHROPIC, CHAT, RESPONSES, GEMINI)
CUSTOM_INPUT = "input"  # the one string parameter a Responses custom (freeform) tool becomes


class ProtocolError(AgentError, ValueError):
    """A request body that does not follow its protocol."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the assistant; `arguments` is the JSON text as the model wrote it."""

    id: str
    name: str
    arguments: str


@dataclass
class Reply:
    """One assistant reply, protocol-neutral."""

    text: str | None
    tool_calls: list[ToolCall]
    finish_reason: str  # stop | tool_calls | length
    tokens: TokenCounts
    model: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:24])


@dataclass
class ChatRequest:
    """A request as chat completions: messages, function tools, and what the agent asked for."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    stream: bool
    model: str  # the model name the agent sent (the gateway ignores it and uses its entry)
    max_tokens: int | None = None
    tool_choice: Any = None
    custom_tools: frozenset[str] = frozenset()  # Responses freeform tools, mapped to one string param
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)  # flat name -> (namespace, name)
    include_usage: bool = False  # chat streams: the agent asked for a final usage chunk

    def prompt_chars(self) -> int:
        """Characters of the prompt (messages and tool schemas), for a cost estimate before the call."""
        return prompt_chars(self.messages, self.tools)


# --- decoding ----------------------------------------------------------------------------------

def _text_of(content: Any) -> str:
    """The text of a content field: a string, or a list of text blocks (other blocks dropped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and isinstance(b.get("text"), str):
                parts.append(b["text"])
            elif isinstance(b, dict) and b.get("type") == "image":
                parts.append("[image omitted]")
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return json.dumps(content)


def _need(body: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(body, dict):
        raise ProtocolError(f"{where}: the request body must be a JSON object")
    value = body.get(key)
    if not isinstance(value, kind):
        raise ProtocolError(f"{where}: `{key}` must be a {kind.__name__}")
    return value


def decode_anthropic(body: Any) -> ChatRequest:
    """An Anthropic Messages request as chat completions."""
    msgs_in = _need(body, "messages", list, "messages")
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of(system)})
    for m in msgs_in:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
            raise ProtocolError("messages: each message needs role user, assistant or system")
        content = m.get("content")
        if m["role"] == "system":  # newer clients put context into the message list as system turns
            messages.append({"role": "system", "content": _text_of(content)})
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        if m["role"] == "assistant":
            text = "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            calls = [
                {"id": b.get("id") or f"toolu_{i}", "type": "function",
                 "function": {"name": b.get("name", ""), "arguments": json.dumps(b.get("input") or {})}}
                for i, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            out: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                out["tool_calls"] = calls
            elif not text:
                out["content"] = ""
            messages.append(out)
            continue
        # user turn: tool results become tool messages (first, answering the previous calls), then the text
        texts = []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_result":
                result = _text_of(b.get("content"))
                if b.get("is_error") and not result.startswith("Error"):
                    result = "Error: " + result
                messages.append({"role": "tool", "tool_call_id": b.get("tool_use_id", ""), "content": result})
            elif b.get("type") == "text":
                texts.append(b.get("text", ""))
            elif b.get("type") == "image":
                texts.append("[image omitted]")
        if texts:
            messages.append({"role": "user", "content": "\n".join(texts)})
    tools = []
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("name") and "input_schema" in t:
            tools.append({"type": "function", "function": {
                "name": t["name"], "description": t.get("description", ""), "parameters": t["input_schema"]}})
    choice = body.get("tool_choice")
    tool_choice = None
    if isinstance(choice, dict):
        kind = choice.get("type")
        tool_choice = {"auto": "auto", "any": "required", "none": "none"}.get(kind)
        if kind == "tool" and choice.get("name"):
            tool_choice = {"type": "function", "function": {"name": choice["name"]}}
    return ChatRequest(messages, tools, bool(body.get("stream")), str(body.get("model", "")),
                       _int_or_none(body.get("max_tokens")), tool_choice)


def decode_chat(body: Any) -> ChatRequest:
    """An OpenAI Chat Completions request (already in the common form)."""
    messages = _need(body, "messages", list, "chat.completions")
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type", "function") == "function"]
    opts = body.get("stream_options") or {}
    return ChatRequest(messages, tools, bool(body.get("stream")), str(body.get("model", "")),
                       _int_or_none(body.get("max_completion_tokens") or body.get("max_tokens")),
                       body.get("tool_choice"), include_usage=bool(isinstance(opts, dict) and opts.get("include_usage")))


def decode_responses(body: Any) -> ChatRequest:
    """An OpenAI Responses request as chat completions (custom tools become one-string-parameter functions)."""
    if not isinstance(body, dict):
        raise ProtocolError("responses: the request body must be a JSON object")
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": _text_of(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise ProtocolError("responses: `input` must be a string or a list of items")
    pending: list[dict[str, Any]] = []  # consecutive function calls form one assistant message

    def flush() -> None:
        if pending:
            messages.append({"role": "assistant", "content": None, "tool_calls": list(pending)})
            pending.clear()

    for it in items:
        if not isinstance(it, dict):
            continue
        kind = it.get("type", "message")
        if kind in ("function_call", "custom_tool_call"):
            args = it.get("arguments") if kind == "function_call" else json.dumps({CUSTOM_INPUT: it.get("input", "")})
            name = it.get("name", "")
            if it.get("namespace"):
                name = flat_name(str(it["namespace"]), name)
            pending.append({"id": it.get("call_id") or it.get("id") or f"call_{len(pending)}", "type": "function",
                            "function": {"name": name, "arguments": args or "{}"}})
            continue
        flush()
        if kind in ("function_call_output", "custom_tool_call_output"):
            messages.append({"role": "tool", "tool_call_id": it.get("call_id", ""), "content": _text_of(it.get("output"))})
        elif kind == "message":
            role = it.get("role", "user")
            role = "system" if role == "developer" else role
            if role not in ("system", "user", "assistant"):
                continue
            messages.append({"role": role, "content": _text_of(it.get("content"))})
        # reasoning items and others carry nothing a chat model can take back
    flush()
    tools, custom, namespaced = [], set(), {}
    listed = list(body.get("tools") or [])
    for t in list(listed):
        # a namespace groups function tools (Codex lists each MCP server's tools as one)
        if isinstance(t, dict) and t.get("type") == "namespace" and t.get("name"):
            for inner in t.get("tools") or []:
                if isinstance(inner, dict) and inner.get("type", "function") == "function" and inner.get("name"):
                    flat = flat_name(t["name"], inner["name"])
                    namespaced[flat] = (t["name"], inner["name"])
                    listed.append({**inner, "type": "function", "name": flat})
    for t in listed:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "function" and t.get("name"):
            tools.append({"type": "function", "function": {
                "name": t["name"], "description": t.get("description") or "",
                "parameters": t.get("parameters") or {"type": "object", "properties": {}}}})
        elif t.get("type") == "custom" and t.get("name"):
            custom.add(t["name"])
            fmt = t.get("format") or {}
            hint = f"\n\nThe input follows this {fmt.get('syntax', 'grammar')}:\n{fmt['definition']}" if fmt.get("definition") else ""
            tools.append({"type": "function", "function": {
                "name": t["name"], "description": (t.get("description") or "") + hint,
                "parameters": {"type": "object", "properties": {CUSTOM_INPUT: {"type": "string"}}, "required": [CUSTOM_INPUT]}}})
    choice = body.get("tool_choice")
    tool_choice = choice if choice in ("auto", "required", "none") else None
    return ChatRequest(messages, tools, bool(body.get("stream")), str(body.get("model", "")),
                       _int_or_none(body.get("max_output_tokens")), tool_choice, frozenset(custom), namespaced)


def flat_name(namespace: str, name: str) -> str:
    """One function name for a namespaced tool (`mcp__memory` + `memory_search` -> `mcp__memory__memory_search`)."""
    return f"{namespace.rstrip('_')}__{name}"


def _gemini_parts(content: Any, where: str) -> list[Any]:
    if not isinstance(content, dict) or not isinstance(content.get("parts", []), list):
        raise ProtocolError(f"{where}: each content needs a list of `parts`")
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def _gemini_text(part: dict[str, Any]) -> str | None:
    """The text a Gemini part contributes to a chat message (thoughts and signatures carry none)."""
    if part.get("thought"):
        return None
    if isinstance(part.get("text"), str):
        return part["text"]
    if "inlineData" in part or "fileData" in part:
        return "[file omitted]"
    if isinstance(part.get("executableCode"), dict):
        return str(part["executableCode"].get("code", ""))
    if isinstance(part.get("codeExecutionResult"), dict):
        return str(part["codeExecutionResult"].get("output", ""))
    return None


def _gemini_result(response: Any) -> str:
    """A functionResponse's `response` as a tool message's text (`output` / `error` as Gemini CLI sends them)."""
    if isinstance(response, dict) and set(response) <= {"output", "error"}:
        if isinstance(response.get("error"), str) and response["error"]:
            out = response.get("output")
            return "Error: " + response["error"] + (f"\n{out}" if isinstance(out, str) and out else "")
        if isinstance(response.get("output"), str):
            return response["output"]
    return response if isinstance(response, str) else json.dumps(response)


def _json_schema(schema: Any) -> Any:
    """A Gemini (OpenAPI-subset) schema as JSON Schema: its upper-case type names in lower case."""
    if isinstance(schema, dict):
        out = {k: _json_schema(v) for k, v in schema.items()}
        if isinstance(out.get("type"), str):
            out["type"] = out["type"].lower()
        return out
    if isinstance(schema, list):
        return [_json_schema(v) for v in schema]
    return schema


def decode_gemini(body: Any) -> ChatRequest:
    """A Gemini generateContent request as chat completions (whether it streams is in the path, not the body)."""
    contents = _need(body, "contents", list, "generateContent")
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        text = system if isinstance(system, str) else "\n".join(
            t for t in (_gemini_text(p) for p in _gemini_parts(system, "systemInstruction")) if t is not None)
        messages.append({"role": "system", "content": text})
    pending: list[tuple[str, str]] = []  # the last model turn's calls (id, name) not yet answered
    for turn, c in enumerate(contents):
        parts = _gemini_parts(c, "contents")
        role = c.get("role") or "user"
        if role not in ("user", "model", "function", "tool"):
            raise ProtocolError("contents: each content's role must be user or model")
        texts = [t for t in (_gemini_text(p) for p in parts) if t is not None]
        if role == "model":
            calls, pending = [], []
            for k, p in enumerate(q for q in parts if isinstance(q.get("functionCall"), dict)):
                fc = p["functionCall"]
                call_id = str(fc.get("id") or f"call_{turn}_{k}")
                pending.append((call_id, str(fc.get("name", ""))))
                calls.append({"id": call_id, "type": "function", "function": {
                    "name": str(fc.get("name", "")), "arguments": json.dumps(fc.get("args") or {})}})
            out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                out["tool_calls"] = calls
            elif out["content"] is None:
                out["content"] = ""
            messages.append(out)
            continue
        # a user turn: function responses answer the previous model turn's calls (by id, else by name, in order)
        answered: set[str] = set()
        for p in parts:
            fr = p.get("functionResponse")
            if not isinstance(fr, dict):
                continue
            if fr.get("id") and fr["id"] in answered:
                continue  # a resumed Gemini CLI session repeats a call's response; chat takes one per call
            name = str(fr.get("name", ""))
            match = next((x for x in pending if fr.get("id") and x[0] == fr["id"]), None) \
                or next((x for x in pending if x[1] == name), None)
            if match is not None:
                pending.remove(match)
            call_id = match[0] if match else str(fr.get("id") or f"call_{turn}_{name}")
            answered.add(call_id)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": _gemini_result(fr.get("response"))})
        if texts:
            messages.append({"role": "user", "content": "\n".join(texts)})
    tools = []
    for t in body.get("tools") or []:
        for f in (t.get("functionDeclarations") or t.get("function_declarations") or []) if isinstance(t, dict) else []:
            if isinstance(f, dict) and f.get("name"):
                schema = f.get("parametersJsonSchema")
                if schema is None:
                    schema = _json_schema(f.get("parameters") or {"type": "object", "properties": {}})
                tools.append({"type": "function", "function": {
                    "name": f["name"], "description": f.get("description") or "", "parameters": schema}})
    config = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}) if isinstance(body.get("toolConfig"), dict) else {}
    mode = str(config.get("mode", "")).upper()
    tool_choice = {"AUTO": "auto", "ANY": "required", "VALIDATED": "auto", "NONE": "none"}.get(mode)
    allowed = config.get("allowedFunctionNames") or []
    if mode == "ANY" and isinstance(allowed, list) and len(allowed) == 1:
        tool_choice = {"type": "function", "function": {"name": str(allowed[0])}}
    gen = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
    return ChatRequest(messages, tools, False, "", _int_or_none(gen.get("maxOutputTokens")), tool_choice)


DECODERS = {ANTHROPIC: decode_anthropic, CHAT: decode_chat, RESPONSES: decode_responses, GEMINI: decode_gemini}


@dataclass(frozen=True)
class Route:
    """What an agent-facing path asks for: its protocol, and for Gemini (which says it in the path,
    not the body) the model, whether the reply streams, and whether it is a token count."""

    protocol: str
    stream: bool | None = None  # None: the body's `stream` decides
    count_tokens: bool = False
    model: str = ""


# the fixed model paths (some clients put /v1 in their base URL, some do not)
ROUTES = {
    "/v1/messages": Route(ANTHROPIC), "/messages": Route(ANTHROPIC),
    "/v1/messages/count_tokens": Route(ANTHROPIC, count_tokens=True),
    "/messages/count_tokens": Route(ANTHROPIC, count_tokens=True),
    "/v1/chat/completions": Route(CHAT), "/chat/completions": Route(CHAT),
    "/v1/responses": Route(RESPONSES), "/responses": Route(RESPONSES),
}
_GEMINI_PATH = re.compile(r"/(?:v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)")


def route_of(path: str) -> Route | None:
    """The model route of a request path (without its query), or None."""
    found = ROUTES.get(path)
    if found is not None or not path.endswith(("Content", "countTokens")):
        return found
    m = _GEMINI_PATH.fullmatch(path)
    if m is None:
        return None
    return Route(GEMINI, stream=m.group(2) == "streamGenerateContent", count_tokens=m.group(2) == "countTokens",
                 model=m.group(1))


def query_problem(route: Route, query: str) -> str | None:
    """Why a query string does not fit the route, or None: a Gemini stream is served as server-sent
    events only (`?alt=sse`, what Google's SDKs ask for), not as one growing JSON array."""
    if route.protocol == GEMINI and route.stream and "alt=sse" not in query.split("&"):
        return "streamGenerateContent is served as server-sent events only: add ?alt=sse"
    return None


def decode(route: Route, body: Any) -> ChatRequest:
    """A request body on `route` as chat completions (ProtocolError if it does not follow the protocol)."""
    try:
        req = DECODERS[route.protocol](body)
    except ProtocolError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError) as e:
        # a field of the wrong JSON type somewhere inside: the agent's malformed request, not a fault here
        raise ProtocolError(f"{route.protocol}: malformed request ({type(e).__name__}: {e})") from None
    if route.stream is not None:
        req.stream = route.stream
    if route.model:
        req.model = route.model
    return req


def count_tokens_body(protocol: str, raw: bytes) -> dict[str, Any]:
    """A token-count reply estimated from the request's size (no model is called)."""
    n = max(1, len(raw) // 4)
    return {"totalTokens": n} if protocol == GEMINI else {"input_tokens": n}


def _int_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else None


# --- replies from litellm ----------------------------------------------------------------------

def reply_from_response(response: Any, tokens: TokenCounts, model: str) -> Reply:
    """A litellm ModelResponse (chat completion) as a Reply."""
    choices = getattr(response, "choices", None) or []
    choice = choices[0] if choices else None
    msg = getattr(choice, "message", None)
    calls = []
    for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
        fn = getattr(tc, "function", None)
        args = getattr(fn, "arguments", None) or ""
        if not isinstance(args, str):
            args = json.dumps(args)
        calls.append(ToolCall(getattr(tc, "id", None) or f"call_{i}", getattr(fn, "name", None) or "", args))
    finish = getattr(choice, "finish_reason", None) or ("tool_calls" if calls else "stop")
    if finish == "tool_calls" and not calls:
        finish = "stop"
    return Reply(getattr(msg, "content", None), calls, finish, tokens, model)


# --- encoding: Anthropic Messages --------------------------------------------------------------

def _anthropic_usage(t: TokenCounts, output: int | None = None) -> dict[str, int]:
    return {"input_tokens": t.uncached, "output_tokens": t.completion if output is None else output,
            "cache_read_input_tokens": t.cached, "cache_creation_input_tokens": t.cache_write}


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _anthropic_blocks(r: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if r.text:
        blocks.append({"type": "text", "text": r.text})
    for c in r.tool_calls:
        blocks.append({"type": "tool_use", "id": _toolu(c.id), "name": c.name, "input": _tool_input(c.arguments)})
    return blocks


def _toolu(call_id: str) -> str:
    return call_id if call_id.startswith("toolu_") else f"toolu_{call_id}"


def _stop_reason(r: Reply) -> str:
    if r.tool_calls:
        return "tool_use"
    return "max_tokens" if r.finish_reason == "length" else "end_turn"


def anthropic_body(r: Reply) -> dict[str, Any]:
    """The Messages API JSON of a reply."""
    return {"id": f"msg_{r.id}", "type": "message", "role": "assistant", "model": r.model,
            "content": _anthropic_blocks(r) or [{"type": "text", "text": ""}], "stop_reason": _stop_reason(r),
            "stop_sequence": None, "usage": _anthropic_usage(r.tokens)}


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event."""
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n").encode()


def anthropic_events(r: Reply) -> Iterator[bytes]:
    """The Messages API stream of a reply (message_start ... message_stop)."""
    start = {**anthropic_body(r), "content": [], "stop_reason": None, "usage": _anthropic_usage(r.tokens, output=0)}
    yield sse("message_start", {"type": "message_start", "message": start})
    for i, b in enumerate(_anthropic_blocks(r)):
        if b["type"] == "text":
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": b["text"]}})
        else:
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {**b, "input": {}}})
            raw = r.tool_calls[i - (1 if r.text else 0)].arguments
            partial = raw if _tool_input(raw) or raw.strip() not in ("", "{}") else json.dumps(b["input"])
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta", "partial_json": partial}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
    yield sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": _stop_reason(r), "stop_sequence": None},
                                "usage": _anthropic_usage(r.tokens)})
    yield sse("message_stop", {"type": "message_stop"})


# --- encoding: OpenAI Chat Completions ---------------------------------------------------------

def _chat_usage(t: TokenCounts) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt_tokens": t.prompt, "completion_tokens": t.completion,
                           "total_tokens": t.prompt + t.completion, "prompt_tokens_details": {"cached_tokens": t.cached}}
    if t.cache_write:
        out["cache_creation_input_tokens"] = t.cache_write
    return out


def _chat_calls(r: Reply) -> list[dict[str, Any]]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in r.tool_calls]


def chat_body(r: Reply) -> dict[str, Any]:
    """The chat.completion JSON of a reply."""
    message: dict[str, Any] = {"role": "assistant", "content": r.text}
    if r.tool_calls:
        message["tool_calls"] = _chat_calls(r)
    return {"id": f"chatcmpl-{r.id}", "object": "chat.completion", "created": int(time.time()), "model": r.model,
            "choices": [{"index": 0, "message": message, "finish_reason": r.finish_reason}], "usage": _chat_usage(r.tokens)}


def chat_events(r: Reply, include_usage: bool = True) -> Iterator[bytes]:
    """The chat.completion.chunk stream of a reply, ending with `data: [DONE]`."""
    base = {"id": f"chatcmpl-{r.id}", "object": "chat.completion.chunk", "created": int(time.time()), "model": r.model}
    delta: dict[str, Any] = {"role": "assistant", "content": r.text or ""}
    yield sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    for i, c in enumerate(r.tool_calls):
        tc = {"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        yield sse(None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]})
    last: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": r.finish_reason}]}
    if include_usage:
        yield sse(None, last)
        yield sse(None, {**base, "choices": [], "usage": _chat_usage(r.tokens)})
    else:
        yield sse(None, last)
    yield sse(None, "[DONE]")


# --- encoding: OpenAI Responses ----------------------------------------------------------------

def _responses_usage(t: TokenCounts) -> dict[str, Any]:
    return {"input_tokens": t.prompt, "input_tokens_details": {"cached_tokens": t.cached},
            "output_tokens": t.completion, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": t.prompt + t.completion}


def _responses_items(r: Reply, custom: frozenset[str], namespaced: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if r.text:
        items.append({"type": "message", "id": f"msg_{r.id}", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": r.text, "annotations": []}]})
    for i, c in enumerate(r.tool_calls):
        if c.name in custom:
            items.append({"type": "custom_tool_call", "id": f"ctc_{r.id}_{i}", "status": "completed", "call_id": c.id,
                          "name": c.name, "input": str(_tool_input(c.arguments).get(CUSTOM_INPUT, ""))})
        else:
            item = {"type": "function_call", "id": f"fc_{r.id}_{i}", "status": "completed", "call_id": c.id,
                    "name": c.name, "arguments": c.arguments}
            if c.name in namespaced:
                item["namespace"], item["name"] = namespaced[c.name]
            items.append(item)
    return items


def responses_body(r: Reply, custom: frozenset[str] = frozenset(),
                   namespaced: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """The Responses API `response` object of a reply."""
    status = "incomplete" if r.finish_reason == "length" else "completed"
    out = {"id": f"resp_{r.id}", "object": "response", "created_at": int(time.time()), "status": status,
           "model": r.model, "output": _responses_items(r, custom, namespaced or {}), "usage": _responses_usage(r.tokens),
           "error": None, "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None}
    return out


def responses_events(r: Reply, custom: frozenset[str] = frozenset(),
                     namespaced: dict[str, tuple[str, str]] | None = None) -> Iterator[bytes]:
    """The Responses API stream of a reply (response.created ... response.completed)."""
    seq = iter(range(1, 1_000_000))
    final = responses_body(r, custom, namespaced)

    def ev(kind: str, **data: Any) -> bytes:
        return sse(kind, {"type": kind, "sequence_number": next(seq), **data})

    yield ev("response.created", response={**final, "status": "in_progress", "output": [], "usage": None})
    yield ev("response.in_progress", response={**final, "status": "in_progress", "output": [], "usage": None})
    for idx, item in enumerate(final["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            yield ev("response.content_part.added", item_id=item["id"], output_index=idx, content_index=0, part=part)
            yield ev("response.output_text.delta", item_id=item["id"], output_index=idx, content_index=0, delta=text)
            yield ev("response.output_text.done", item_id=item["id"], output_index=idx, content_index=0, text=text)
            yield ev("response.content_part.done", item_id=item["id"], output_index=idx, content_index=0,
                     part={**part, "text": text})
        elif item["type"] == "function_call":
            yield ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "arguments": ""})
            yield ev("response.function_call_arguments.delta", item_id=item["id"], output_index=idx, delta=item["arguments"])
            yield ev("response.function_call_arguments.done", item_id=item["id"], output_index=idx, arguments=item["arguments"])
        else:
            yield ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "input": ""})
            yield ev("response.custom_tool_call_input.delta", item_id=item["id"], output_index=idx, delta=item["input"])
            yield ev("response.custom_tool_call_input.done", item_id=item["id"], output_index=idx, input=item["input"])
        yield ev("response.output_item.done", output_index=idx, item=item)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield ev(kind, response=final)


# --- encoding: Gemini generateContent ----------------------------------------------------------

def _gemini_usage(t: TokenCounts) -> dict[str, int]:
    out = {"promptTokenCount": t.prompt, "candidatesTokenCount": t.completion, "totalTokenCount": t.prompt + t.completion}
    if t.cached:
        out["cachedContentTokenCount"] = t.cached
    return out


def gemini_body(r: Reply) -> dict[str, Any]:
    """The generateContent JSON of a reply (function calls carry the call id, which clients send back)."""
    parts: list[dict[str, Any]] = [{"text": r.text}] if r.text else []
    parts += [{"functionCall": {"id": c.id, "name": c.name, "args": _tool_input(c.arguments)}} for c in r.tool_calls]
    finish = "MAX_TOKENS" if r.finish_reason == "length" else "STOP"
    return {"candidates": [{"content": {"role": "model", "parts": parts or [{"text": ""}]}, "finishReason": finish,
                            "index": 0}],
            "usageMetadata": _gemini_usage(r.tokens), "modelVersion": r.model, "responseId": r.id}


def gemini_events(r: Reply) -> Iterator[bytes]:
    """The streamGenerateContent (?alt=sse) stream of a reply: one event, the whole response."""
    yield sse(None, gemini_body(r))


def encode(protocol: str, r: Reply, req: ChatRequest) -> tuple[dict[str, Any] | None, Iterator[bytes] | None]:
    """The reply in `protocol`: (JSON body, None) or, for a streaming request, (None, SSE chunks)."""
    if protocol == GEMINI:
        return (None, gemini_events(r)) if req.stream else (gemini_body(r), None)
    if protocol == ANTHROPIC:
        return (None, anthropic_events(r)) if req.stream else (anthropic_body(r), None)
    if protocol == RESPONSES:
        if req.stream:
            return None, responses_events(r, req.custom_tools, req.namespaced)
        return responses_body(r, req.custom_tools, req.namespaced), None
    return (None, chat_events(r, req.include_usage)) if req.stream else (chat_body(r), None)


def error_body(protocol: str, status: int, message: str, kind: str = "api_error") -> dict[str, Any]:
    """An error in the protocol's own shape."""
    if protocol == ANTHROPIC:
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == GEMINI:
        return {"error": {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}}
    return {"error": {"message": message, "type": kind, "code": status}}


# google.rpc status names of the HTTP codes the gateway answers with
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  405: "INVALID_ARGUMENT", 408: "DEADLINE_EXCEEDED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                  501: "UNIMPLEMENTED", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


@dataclass(frozen=True)
class HTTPReply:
    """What the gateway answers one agent call with."""

    status: int
    body: bytes
    media_type: str = "application/json"
    headers: tuple[tuple[bytes, bytes], ...] = ()
