"""A scripted model server on 127.0.0.1 for tests and benchmarks: OpenAI Chat Completions, Anthropic
Messages, OpenAI Responses and Gemini generateContent, each with or without streaming.

`python -m sdebench.testmodel --script FILE --port N` answers POST /v1/chat/completions,
/v1/messages and /v1/responses (each streamed as server-sent events when the request says
`stream: true`) and /v1beta/models/MODEL:generateContent (:streamGenerateContent?alt=sse
streamed) from a script (JSON or YAML): a list of steps, served in order across all four
protocols, each one of

    {tool: NAME, arguments: {...}}              one tool call
    {tool_calls: [{name: NAME, arguments: {...}}, ...]}
    {text: "..."}                               a plain reply without a tool call
    {garbage: "RAW", tool: NAME}                a tool call whose arguments are not valid JSON
    {error: 429, message: "..."}                an HTTP error, answered once
    {outage: 503}                               from this request on, every model request (pre-flight
                                                and liveness probes included) is answered 503: a model
                                                that failed for good
    {outage: dead}                              from this request on, the server is gone: run as its own
                                                process it exits at once, unanswered (later connections
                                                are refused); in a thread it closes its port and drops
                                                every connection unanswered

with optional `usage: {prompt_tokens, completion_tokens, cached_tokens}` (OpenAI convention: prompt
includes cached; `cache_creation_input_tokens` counts cache writes; other keys pass through into a
chat reply's usage; an Anthropic reply splits them its own way), `delay_s` (sleep before answering), `repeat: true` (serve this step
forever) and `at: N` (serve it as the N-th request, 1-based, outside the sequence). The script may
also be a mapping `{steps: [...], default_usage: {...}, model: NAME, delay_s: S, max_inflight: K, embedding_dims: N}`:
`delay_s` is the reply delay of every step that sets none (a real model's latency, for benchmarks;
`--delay S` sets it too) and `max_inflight` a rate limit: a model request arriving while K others
are being answered is refused with 429 and `Retry-After: 1`, using no step (`--max-inflight K`;
GET /limited counts the refusals). When the steps run out the
server answers 400 "script exhausted", so a run that talks past its script ends visibly.

A Responses tool declared `custom` (freeform) is answered as a `custom_tool_call` whose input is the
step's `arguments.input`. POST /v1/messages/count_tokens, :countTokens and GET /v1/models answer
without taking a step.

POST /v1/embeddings (OpenAI's embeddings API) answers without taking a step: `input` is a string or a
list of strings; each gets a deterministic vector, a hashed bag of words (its lower-cased alphanumeric
words, each hashed to one of the vector's positions with a sign, summed and scaled to unit length; a
text without words gets the first unit vector), so texts that share words are near in cosine
similarity. Its length is the request's `dimensions`, else the script's `embedding_dims` (default
256; `--embedding-dims N`); `encoding_format: base64` sends little-endian float32s. The usage counts
one prompt token a word (at least one an input); GET /embeddings totals the requests, inputs and
tokens served. An outage in force fails embeddings too.

A run's pre-flight call and a liveness probe (sdebench.agents.liveness.PROBE_TEXT) is answered with one token and
listed by GET /probes, never in /requests and never using a step. GET /requests returns what the server received, with the time it took to answer each
(`server_s`, for benchmarks); POST /script replaces the script
and clears the record; `--port 0` picks a free port. The chosen address is printed as the first
stdout line: `sdebench.testmodel listening on http://127.0.0.1:PORT/v1`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sdebench.agents.accounting import TokenCounts
from sdebench.agents.liveness import PROBE_TEXT
from sdebench.errors import ConfigError
from sdebench.gateway import protocols

HOST = "127.0.0.1"
BANNER = re.compile(r"listening on (http://127\.0\.0\.1:(\d+)/v1)")
DEFAULT_USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 0}
_GARBAGE = '{"path": "unterminated'
_KINDS = ("tool", "tool_calls", "text", "garbage", "error", "outage")
DEAD = "dead"
EMBEDDING_DIMS = 256  # the length of an embedding when neither the request nor the script sets one
MAX_EMBEDDING_DIMS = 8192
EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")
_WORD = re.compile(r"[a-z0-9]+")


class ScriptError(ConfigError):
    """A script file is malformed."""


@dataclass(frozen=True)
class Step:
    """One scripted reply."""

    kind: str  # tool_calls | text | garbage | error | outage
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, arguments as sent: JSON text or garbage)
    text: str = ""
    status: int = 0
    message: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    delay_s: float = 0.0
    repeat: bool = False
    at: int | None = None


@dataclass(frozen=True)
class Script:
    """The steps of a script, plus defaults."""

    steps: tuple[Step, ...]
    model: str = "testmodel"
    delay_s: float = 0.0  # the reply delay of a step that sets none
    max_inflight: int | None = None  # more requests than this at once are answered 429
    embedding_dims: int = EMBEDDING_DIMS  # the length of an embedding a request does not size


def parse_script(data: Any) -> Script:
    """Validate a loaded script document (list of steps, or a mapping with `steps`)."""
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ScriptError("a script is a list of steps or a mapping with a `steps` list")
    default_usage = {**DEFAULT_USAGE, **_int_map(data.get("default_usage") or {}, "default_usage")}
    steps = tuple(_parse_step(i, s, default_usage) for i, s in enumerate(data["steps"], 1))
    inflight = data.get("max_inflight")
    if inflight is not None and (not isinstance(inflight, int) or inflight < 1):
        raise ScriptError("max_inflight must be a whole number >= 1")
    dims = data.get("embedding_dims", EMBEDDING_DIMS)
    if not _valid_dims(dims):
        raise ScriptError(f"embedding_dims must be a whole number from 1 to {MAX_EMBEDDING_DIMS}")
    return Script(
        steps=steps,
        model=str(data.get("model", "testmodel")),
        delay_s=float(data.get("delay_s", 0.0)),
        max_inflight=inflight,
        embedding_dims=dims,
    )


def _valid_dims(dims: Any) -> bool:
    return isinstance(dims, int) and not isinstance(dims, bool) and 1 <= dims <= MAX_EMBEDDING_DIMS


def load_script(path: Path) -> Script:
    """Read a JSON or YAML script file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScriptError(f"cannot read script {path}: {e.strerror}") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml  # only needed for YAML scripts

            data = yaml.safe_load(text)
    except Exception as e:  # noqa: BLE001 - json.JSONDecodeError or yaml.YAMLError
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ScriptError(f"script {path} is not valid JSON/YAML: {first}") from None
    try:
        return parse_script(data)
    except ScriptError as e:
        raise ScriptError(f"script {path}: {e}") from None


def _int_map(m: Any, where: str) -> dict[str, int]:
    if not isinstance(m, dict) or not all(isinstance(v, int) and v >= 0 for v in m.values()):
        raise ScriptError(f"{where} must map names to non-negative integers")
    return {str(k): int(v) for k, v in m.items()}


def _parse_step(i: int, s: Any, default_usage: dict[str, int]) -> Step:
    if not isinstance(s, dict):
        raise ScriptError(f"step {i}: a step is a mapping, got {type(s).__name__}")
    kinds = [k for k in _KINDS if k in s]
    if "garbage" in kinds and "tool" in kinds:
        kinds.remove("tool")  # `tool` names the garbled call
    if len(kinds) != 1:
        raise ScriptError(f"step {i}: needs exactly one of {', '.join(_KINDS)}; got {kinds or 'none'}")
    common = {
        "usage": {**default_usage, **_int_map(s.get("usage") or {}, f"step {i} usage")},
        "delay_s": float(s.get("delay_s", 0.0)),
        "repeat": bool(s.get("repeat", False)),
        "at": int(s["at"]) if s.get("at") is not None else None,
    }
    kind = kinds[0]
    if kind == "tool":
        return Step("tool_calls", tool_calls=(_call(i, s["tool"], s.get("arguments", {})),), **common)
    if kind == "tool_calls":
        calls = s["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise ScriptError(f"step {i}: tool_calls must be a non-empty list")
        parsed = []
        for c in calls:
            if not isinstance(c, dict) or "name" not in c:
                raise ScriptError(f"step {i}: each tool call needs a name")
            parsed.append(_call(i, c["name"], c.get("arguments", {})))
        return Step("tool_calls", tool_calls=tuple(parsed), **common)
    if kind == "text":
        return Step("text", text=str(s["text"]), **common)
    if kind == "garbage":
        raw = s["garbage"] if isinstance(s["garbage"], str) else _GARBAGE
        return Step("garbage", tool_calls=((str(s.get("tool", "edit_file")), raw),), **common)
    if kind == "outage":
        what = s["outage"]
        if what != DEAD and not (isinstance(what, int) and 400 <= what <= 599):
            raise ScriptError(f"step {i}: outage must be an HTTP status 400-599 or {DEAD!r}")
        return Step("outage", status=0 if what == DEAD else what, message=str(s.get("message", "model unavailable")),
                    **common)
    status = s["error"]
    if not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"step {i}: error must be an HTTP status 400-599")
    return Step("error", status=status, message=str(s.get("message", f"scripted error {status}")), **common)


def _call(i: int, name: Any, arguments: Any) -> tuple[str, str]:
    if not isinstance(name, str) or not name:
        raise ScriptError(f"step {i}: a tool name must be a non-empty string")
    if isinstance(arguments, str):
        return name, arguments  # sent verbatim, e.g. to test argument parsing
    if not isinstance(arguments, dict):
        raise ScriptError(f"step {i}: arguments must be a mapping or a string")
    return name, json.dumps(arguments)


def embed(text: str, dims: int) -> list[float]:
    """The test model's embedding of `text`: a hashed bag of its words, of unit length (see the module docstring)."""
    vec = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vec[h % dims] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:
        vec[0], norm = 1.0, 1.0  # no words: a fixed unit vector, never a zero one (cosine is undefined there)
    return [x / norm for x in vec]


def embedding_tokens(text: str) -> int:
    """The prompt tokens an input is counted as: its words, at least one."""
    return max(1, len(_WORD.findall(text.lower())))


def embeddings_body(model: str, body: Any, default_dims: int) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer of an embeddings request (400 with an OpenAI error body if it is malformed)."""

    def bad(message: str) -> tuple[int, dict[str, Any]]:
        return 400, {"error": {"message": message, "type": "invalid_request_error"}}

    if not isinstance(body, dict):
        return bad("the request body must be a JSON object")
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
        return bad("`input` must be a string or a non-empty list of strings (token arrays are not served)")
    dims = body.get("dimensions", default_dims)
    if not _valid_dims(dims):
        return bad(f"`dimensions` must be a whole number from 1 to {MAX_EMBEDDING_DIMS}")
    fmt = body.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        return bad("`encoding_format` must be float or base64")
    data = []
    for i, text in enumerate(inputs):
        vec: Any = embed(text, dims)
        if fmt == "base64":
            vec = base64.b64encode(struct.pack(f"<{dims}f", *vec)).decode()
        data.append({"object": "embedding", "index": i, "embedding": vec})
    tokens = sum(embedding_tokens(t) for t in inputs)
    return 200, {
        "object": "list",
        "data": data,
        "model": str(body.get("model") or model),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class ScriptedModel:
    """The server's state: the script, the position in it, and the requests received."""

    def __init__(self, script: Script):
        self.lock = threading.Lock()
        self.reset(script)

    def reset(self, script: Script) -> None:
        """Start over with `script`."""
        with self.lock:
            self.script = script
            self.position = 0
            self.requests: list[dict[str, Any]] = []
            self.probes: list[dict[str, Any]] = []  # pre-flight calls (sdebench.runs.preflight), not in `requests`
            self.outage: Step | None = None  # the outage in force: every model request fails (probes too)
            self.inflight = 0  # model requests being answered now
            self.limited = 0  # requests refused with 429 by `max_inflight`
            self.embeddings = {"requests": 0, "inputs": 0, "tokens": 0}  # embeddings served (GET /embeddings)

    def enter(self) -> bool:
        """Count one model request in, unless `max_inflight` are being answered (then count a refusal)."""
        with self.lock:
            cap = self.script.max_inflight
            if cap is not None and self.inflight >= cap:
                self.limited += 1
                return False
            self.inflight += 1
            return True

    def leave(self) -> None:
        """Count one model request out."""
        with self.lock:
            self.inflight -= 1

    def next_step(self, record: dict[str, Any]) -> tuple[int, Step | None]:
        """Record one request and pick the step that answers it (None: script exhausted); an outage
        step, once reached, answers every later request."""
        with self.lock:
            self.requests.append(record)
            n = len(self.requests)
            record["n"] = n
            if self.outage is not None:
                record["step"], record["outage"] = None, True
                return n, self.outage
            for idx, step in enumerate(self.script.steps):
                if step.at == n:
                    record["step"] = idx + 1
                    return n, step
            seq = [(idx, s) for idx, s in enumerate(self.script.steps) if s.at is None]
            if self.position >= len(seq):
                record["step"] = None
                return n, None
            idx, step = seq[self.position]
            if not step.repeat:
                self.position += 1
            record["step"] = idx + 1
            if step.kind == "outage":
                self.outage = step
                record["outage"] = True
            return n, step

    def probe_step(self, record: dict[str, Any]) -> Step:
        """Record a pre-flight or liveness probe and pick its answer: one token, or the outage in force."""
        with self.lock:
            self.probes.append(record)
            if self.outage is not None:
                record["outage"] = True
                return self.outage
        return Step("text", text="ok", usage={"prompt_tokens": 8, "completion_tokens": 1, "cached_tokens": 0})

    def embeddings_answer(self, body: Any) -> tuple[int, dict[str, Any]]:
        """Answer an embeddings request (no step is used) and count what it served; the outage in force fails it."""
        with self.lock:
            outage, script = self.outage, self.script
        if outage is not None:
            return outage.status or 503, {"error": {"message": outage.message, "type": "api_error"}}
        status, out = embeddings_body(script.model, body, script.embedding_dims)
        if status == 200:
            with self.lock:
                self.embeddings["requests"] += 1
                self.embeddings["inputs"] += len(out["data"])
                self.embeddings["tokens"] += out["usage"]["prompt_tokens"]
        return status, out

    def probe_step_n(self, record: dict[str, Any]) -> tuple[int, Step]:
        """`probe_step` with the request number probes are answered as (0)."""
        return 0, self.probe_step(record)


def completion_body(model: str, n: int, step: Step) -> dict[str, Any]:
    """The chat.completion JSON answering request `n` with `step`."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if step.kind == "text":
        message["content"] = step.text
    else:
        message["tool_calls"] = [
            {"id": f"call_{n}_{k}", "type": "function", "function": {"name": name, "arguments": args}}
            for k, (name, args) in enumerate(step.tool_calls)
        ]
        finish = "tool_calls"
    u = dict(step.usage)
    prompt, completion, cached = u.pop("prompt_tokens"), u.pop("completion_tokens"), u.pop("cached_tokens")
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        **u,
    }
    return {
        "id": f"chatcmpl-test-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def step_reply(model: str, n: int, step: Step) -> protocols.Reply:
    """A scripted step as a protocol-neutral reply (for the Anthropic and Responses encoders)."""
    u = step.usage
    tokens = TokenCounts(prompt=u.get("prompt_tokens", 0), completion=u.get("completion_tokens", 0),
                         cached=u.get("cached_tokens", 0), cache_write=u.get("cache_creation_input_tokens", 0))
    calls = [protocols.ToolCall(f"call_{n}_{k}", name, args) for k, (name, args) in enumerate(step.tool_calls)]
    text = step.text if step.kind == "text" else None
    return protocols.Reply(text, calls, "tool_calls" if calls else "stop", tokens, model, id=f"test{n}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # headers and body go out as separate writes: without TCP_NODELAY, Nagle plus the client's
    # delayed ACK would add ~40 ms to every reply
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: request lines would clutter test output."""

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # the client hung up first (a client timeout under test): nobody is left to answer
            self.close_connection = True

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw or b"null")

    def _send_stream(self, chunks: Any) -> None:
        data = b"".join(chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """GET /requests (what was received), /v1/models or /health."""
        if self.path.split("?")[0] in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.model.script.model, "object": "model",
                                                          "owned_by": "sdebench"}]})
        elif self.path == "/probes":
            with self.server.model.lock:
                self._send(200, list(self.server.model.probes))
        elif self.path == "/requests":
            with self.server.model.lock:
                self._send(200, list(self.server.model.requests))
        elif self.path == "/limited":
            with self.server.model.lock:
                self._send(200, {"limited": self.server.model.limited})
        elif self.path == "/embeddings":
            with self.server.model.lock:
                self._send(200, dict(self.server.model.embeddings))
        elif self.path == "/health":
            self._send(200, {"ok": True})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        """POST a chat completion, or a new script to /script."""
        if self.server.dead:  # a connection kept alive across the death: no answer
            self.close_connection = True
            return
        t0 = time.perf_counter()
        try:
            body = self._body()
        except ValueError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        if self.path == "/script":
            try:
                self.server.model.reset(parse_script(body))
            except ScriptError as e:
                self._send(400, {"error": {"message": str(e)}})
                return
            self._send(200, {"ok": True})
            return
        path, _, query = self.path.partition("?")
        if path in EMBEDDING_PATHS:
            model = self.server.model
            if model.outage is not None and not model.outage.status:
                self.server.die()
                self.close_connection = True
                return
            self._send(*model.embeddings_answer(body))
            return
        route = protocols.route_of(path)
        if route is None:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        protocol = route.protocol
        problem = protocols.query_problem(route, query)
        if problem:
            self._send(400, protocols.error_body(protocol, 400, problem, "invalid_request_error"))
            return
        if route.count_tokens:
            self._send(200, protocols.count_tokens_body(protocol, json.dumps(body).encode()))
            return
        record = {"path": path, "protocol": protocol, "body": body, "authorization": self.headers.get("Authorization"),
                  "x_api_key": self.headers.get("x-api-key"), "x_goog_api_key": self.headers.get("x-goog-api-key"),
                  "anthropic_headers": {k.lower(): v for k, v in self.headers.items() if k.lower().startswith("anthropic-")}}
        try:
            req = protocols.decode(route, body)
        except protocols.ProtocolError as e:
            self._send(400, protocols.error_body(protocol, 400, str(e), "invalid_request_error"))
            return
        if PROBE_TEXT in json.dumps(body):
            # a run's pre-flight call is answered (one token) without using up the script
            self._answer(route, req, record, t0, *self.server.model.probe_step_n(record))
            return
        if not self.server.model.enter():
            self._send_limited(protocol)
            return
        try:
            self._answer(route, req, record, t0, *self.server.model.next_step(record))
        finally:
            self.server.model.leave()

    def _send_limited(self, protocol: str) -> None:
        data = json.dumps(protocols.error_body(protocol, 429, "rate limit: too many requests at once",
                                               "rate_limit_error")).encode()
        self.send_response(429)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, route: Any, req: Any, record: dict[str, Any], t0: float, n: int, step: Step | None) -> None:
        protocol = route.protocol
        if step is None:
            msg = f"test model script exhausted: request {n} has no step"
            self._send(400, protocols.error_body(protocol, 400, msg, "invalid_request_error"))
            return
        if step.kind == "outage" and not step.status:
            self.server.die()
            self.close_connection = True
            return
        # the script's default delay stands in for a model's latency: probes (n 0) and outages skip it
        delay = step.delay_s or (self.server.model.script.delay_s if n and step.kind != "outage" else 0.0)
        if delay:
            time.sleep(delay)
        if step.kind in ("error", "outage"):
            kind = "rate_limit_error" if step.status == 429 else "api_error"
            record["server_s"] = time.perf_counter() - t0
            self._send(step.status, protocols.error_body(protocol, step.status, step.message, kind))
            return
        model = self.server.model.script.model
        if protocol == protocols.CHAT and not req.stream:
            record["server_s"] = time.perf_counter() - t0
            self._send(200, completion_body(model, n, step))
            return
        out, events = protocols.encode(protocol, step_reply(model, n, step), req)
        # the "model's reply time" as the server sees it, so benchmarks can subtract it
        record["server_s"] = time.perf_counter() - t0
        if events is not None:
            self._send_stream(events)
        else:
            self._send(200, out)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: ScriptedModel
    hard_exit = False  # run as its own process (`main`): dying is the process's exit
    dead = False

    def die(self) -> None:
        """Stop answering for good: exit the process, or close the port and drop every connection."""
        if self.hard_exit:
            os._exit(75)
        self.dead = True
        # shutdown() waits for serve_forever, which runs in another thread: not from this handler's
        threading.Thread(target=lambda: (self.shutdown(), self.server_close()), daemon=True).start()


def make_server(script: Script, port: int = 0) -> _Server:
    """A server bound to 127.0.0.1:`port` (0: any free port); call serve_forever() to run it."""
    server = _Server((HOST, port), _Handler)
    server.model = ScriptedModel(script)
    return server


def base_url(server: _Server) -> str:
    """The api_base of a running server."""
    return f"http://{HOST}:{server.server_address[1]}/v1"


@contextlib.contextmanager
def in_thread(script: Script, port: int = 0) -> Iterator[_Server]:
    """Run a server in a daemon thread of this process for the duration of the block."""
    server = make_server(script, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def subprocess_server(script_file: Path, port: int = 0, startup_s: float = 30.0) -> Iterator[str]:
    """Run `python -m sdebench.testmodel` as a child process; yields its api_base URL."""
    argv = [sys.executable, "-m", "sdebench.testmodel", "--script", str(script_file), "--port", str(port)]
    # stderr goes to a file: an unread pipe could fill up and stall the server
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            yield _read_banner(proc, err, startup_s)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()


def _read_banner(proc: subprocess.Popen, err: Any, startup_s: float) -> str:
    # readline blocks; a watchdog kills a child that never prints its banner
    timer = threading.Timer(startup_s, proc.kill)
    timer.start()
    try:
        line = proc.stdout.readline() if proc.stdout else ""
    finally:
        timer.cancel()
    m = BANNER.search(line)
    if not m:
        proc.wait(timeout=5)
        err.seek(0)
        raise RuntimeError(f"test model server did not start: {(line + err.read()).strip()[:500]}")
    return m.group(1)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.testmodel", description=__doc__.splitlines()[0])
    ap.add_argument("--script", required=True, type=Path, help="JSON or YAML script of replies")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: pick a free one)")
    ap.add_argument("--delay", type=float, default=None, metavar="S",
                    help="reply delay of every step that sets none (a real model's latency)")
    ap.add_argument("--max-inflight", type=int, default=None, metavar="K",
                    help="answer 429 (Retry-After: 1) to a request arriving while K others are being answered")
    ap.add_argument(
        "--embedding-dims",
        type=int,
        default=None,
        metavar="N",
        help=f"length of an embedding a request does not size (default: the script's, else {EMBEDDING_DIMS})",
    )
    args = ap.parse_args(argv)
    try:
        script = load_script(args.script)
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.max_inflight is not None and args.max_inflight < 1:
        print("error: --max-inflight must be >= 1", file=sys.stderr)
        return 2
    if args.embedding_dims is not None and not _valid_dims(args.embedding_dims):
        print(f"error: --embedding-dims must be from 1 to {MAX_EMBEDDING_DIMS}", file=sys.stderr)
        return 2
    if args.delay is not None or args.max_inflight is not None or args.embedding_dims is not None:
        import dataclasses

        script = dataclasses.replace(
            script,
            delay_s=script.delay_s if args.delay is None else args.delay,
            max_inflight=args.max_inflight or script.max_inflight,
            embedding_dims=args.embedding_dims or script.embedding_dims,
        )
    try:
        server = make_server(script, args.port)
    except OSError as e:
        print(f"error: cannot listen on {HOST}:{args.port}: {e.strerror}", file=sys.stderr)
        return 2
    server.hard_exit = True
    print(f"sdebench.testmodel listening on {base_url(server)}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
