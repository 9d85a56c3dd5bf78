"""The gateway server: one per episode, on the host, in a thread of the episode's process.

Routes: POST /v1/messages (Anthropic Messages, streaming or not), /v1/messages/count_tokens,
POST /v1/chat/completions (OpenAI Chat Completions), POST /v1/responses (OpenAI Responses),
POST /v1beta/models/MODEL:generateContent, :streamGenerateContent?alt=sse and :countTokens
(Gemini), GET /v1/models, and, when the episode has the memory tool, /mcp (the tool over MCP) and
POST /memory_search (the same search for the `memory_search` command in the sandbox), and POST
/v1/embeddings (the entry as an embedding model: sdebench.gateway.embeddings). Every request must
carry the episode's random token (`x-api-key`, `x-goog-api-key` or `Authorization: Bearer`); the
real key of the model entry stays in this process.

A model call is decoded into chat completions, admitted by the meter (limits), made through
litellm's provider mapping on the configured model entry (`sdebench.gateway.upstream`: litellm's
provider config over the gateway's own HTTP client for an OpenAI-compatible entry,
`litellm.completion` for any other; never streamed upstream: the reply is then re-encoded, as one
body or as a stream, in the agent's protocol), accounted with the built-in agent's rules, and
logged to the trajectory as a `model_call` event.

The model routes are served by a small ASGI layer of their own (Starlette's request, routing and
middleware cost ~1 ms a call); a fault in the gateway's own code is a 500 in the agent's protocol
and a logged `model_error`, and an admitted call that fails holds nothing of the cost budget.

It listens on a unix socket (what the sandbox relay connects to) and, if asked, on a loopback TCP
port (benchmarks, tests, agents run without a sandbox).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from sdebench.agents import liveness
from sdebench.agents.accounting import DEFAULT_MAX_TOKENS, PricingError, TokenCounts
from sdebench.agents.base import Limits, Toolbox, Usage
from sdebench.agents.model import ModelSettings
from sdebench.gateway import protocols, upstream
from sdebench.gateway.meter import LimitReached, Meter, Ticket
from sdebench.gateway.protocols import HTTPReply

MAX_LOGGED_CHARS = 4000
STARTUP_S = 30.0
# the largest request body the gateway reads (a 1M-token conversation is ~4-5 MB of JSON): an agent
# must not be able to make the host process buffer without bound
MAX_BODY_BYTES = 64 << 20
# every call failing for this long (and a probe of the gateway's own failing too) makes the model
# dead: later calls are refused at once, so a CLI does not retry a dead model for the whole episode
DEAD_AFTER_S = 60.0
# the status of that refusal: every CLI gives up on it at once (a 5xx or 429 would be retried)
DEAD_STATUS = 404
# its message names no upstream error: some CLIs retry any error whose text reads like a transient
# one ("503", "service unavailable", "connection refused"), whatever its status (OpenCode does)
DEAD_MESSAGE = "sdebench gateway: the model is unreachable for the rest of this episode; the call was not sent"


@functools.cache
def freeze_imported_heap() -> None:
    """Move what the process holds before its first gateway (litellm's ~400k objects, imported once)
    out of the cyclic collector, once: a full collection over them stalls a model call ~250 ms
    every few hundred calls. Cyclic garbage is collected first, so nothing dead is kept."""
    gc.collect()
    gc.freeze()


def new_token() -> str:
    """A per-episode random token the agent uses in place of an API key."""
    return "sdb-" + secrets.token_urlsafe(24)


def _short(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:300]}" if text else type(e).__name__


def _status(e: BaseException) -> int:
    code = getattr(e, "status_code", None)
    return code if isinstance(code, int) and 400 <= code <= 599 else 502


def _clip(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_LOGGED_CHARS else text[:MAX_LOGGED_CHARS] + f"... [{len(text)} chars]"


class Gateway:
    """The model gateway of one episode."""

    def __init__(
        self,
        model: ModelSettings,
        meter: Meter,
        log: Callable[..., None],
        *,
        toolbox: Toolbox | None = None,
        token: str | None = None,
        seed: int | None = None,
        redact: tuple[str, ...] = (),
        route: str = "auto",
        dead_after_s: float = DEAD_AFTER_S,
    ):
        self.model = model
        self.meter = meter
        self.log = log
        self.toolbox = toolbox if toolbox is not None and toolbox.memory_names() else None
        self.token = token or new_token()
        self.seed = seed
        self.redact = tuple(r for r in redact if r)
        self.last_error: str | None = None  # the last upstream failure, for the agent's error
        # the calls failed since the model last answered one (sdebench.agents.liveness), and why the
        # model is dead once a probe confirmed it (every later call is refused)
        self.streak = liveness.Streak()
        self.dead: str | None = None
        self.dead_after_s = dead_after_s
        self._probing = False
        self._probed_at: float | None = None  # a live model is probed again only after another dead_after_s
        self._failures = 0  # failed calls of the episode (never reset)
        self._alive_after: int | None = None  # `_failures` when a probe last found the model alive
        self.calls = 0
        # one per gateway (its HTTP client keeps the connection to the model open across calls)
        self.upstream = upstream.route_for(model.litellm_model, model.api_base, model.extra, route)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sockets: list[socket.socket] = []
        self.socket_path: Path | None = None
        self.port: int | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        """The metered totals of the episode."""
        return self.meter.usage

    @property
    def has_memory(self) -> bool:
        """Whether /mcp serves memory tools."""
        return self.toolbox is not None

    def start(self, socket_path: Path | None = None, tcp: bool = False) -> Gateway:
        """Listen on a unix socket and/or a free loopback port, serving from a background thread."""
        import uvicorn

        if socket_path is None and not tcp:
            raise ValueError("the gateway needs a unix socket path or tcp=True")
        freeze_imported_heap()
        if socket_path is not None:
            self.socket_path = Path(socket_path)
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(self.socket_path))
            os.chmod(self.socket_path, 0o777)  # the sandbox user may differ (docker runs as nobody)
            self._sockets.append(s)
        if tcp:
            # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and
            # without it Nagle + the client's delayed ACK add ~40 ms to every reply.
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
            self._sockets.append(s)
        config = uvicorn.Config(self.app(), log_level="warning", access_log=False, lifespan="on",
                                timeout_keep_alive=600, loop="asyncio", http="httptools", ws="none")  # httptools: C parser
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": self._sockets},
                                        name="sdebench-gateway", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the model gateway did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket; safe to call twice."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.close()
        self._sockets = []
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT of the TCP listener."""
        if self.port is None:
            raise RuntimeError("the gateway has no TCP listener")
        return f"http://127.0.0.1:{self.port}"

    # --- the app -----------------------------------------------------------------------------
    def app(self) -> Any:
        """The ASGI app: the token check, the model routes, then Starlette (model list, /mcp)."""
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Mount, Route

        mcp_app = command = None
        if self.toolbox is not None:
            from sdebench.gateway.mcp_memory import command_route, memory_app

            mcp_app = memory_app(self.toolbox, self._log)
            # the in-sandbox command is BM25's search (agents without an MCP client)
            command = command_route(self.toolbox, self._log) if "memory_search" in self.toolbox.memory_names() else None

        async def models(request: Any) -> Any:
            return JSONResponse({"object": "list", "data": [{"id": self.model.name, "object": "model",
                                                             "owned_by": "sdebench", "created": 0}]})

        from sdebench.gateway import embeddings

        routes = [
            Route("/v1/models", models, methods=["GET"]),
            Route("/models", models, methods=["GET"]),
            *embeddings.routes(self),
        ]
        if mcp_app is not None:
            routes += [*([command] if command is not None else []), Mount("/", app=mcp_app)]

        @contextlib.asynccontextmanager
        async def lifespan(app: Any):
            try:
                if mcp_app is None:
                    yield
                else:
                    async with mcp_app.router.lifespan_context(mcp_app):
                        yield
            finally:
                await self.upstream.aclose()

        app = Starlette(routes=routes, lifespan=lifespan)
        return _TokenCheck(_BodyLimit(_ModelRoutes(self, app), MAX_BODY_BYTES), self.token)

    # --- one model call ------------------------------------------------------------------------
    def _log(self, kind: str, **data: Any) -> None:
        self.log(kind, **data)

    def _redacted(self, message: str) -> str:
        for s in self.redact:
            message = message.replace(s, "[REDACTED]")
        return message

    def error(self, protocol: str, status: int, message: str, kind: str = "api_error",
              headers: tuple[tuple[bytes, bytes], ...] = ()) -> HTTPReply:
        """An error reply in the agent's protocol (redacted)."""
        body = protocols.error_body(protocol, status, self._redacted(message), kind)
        return HTTPReply(status, orjson.dumps(body), headers=headers)

    async def model_call(self, route: protocols.Route, raw: bytes) -> HTTPReply:
        """One agent call on a model route (its request body): decoded, admitted, forwarded, accounted, logged."""
        try:
            return await self._model_call(route, raw)
        except Exception as e:  # noqa: BLE001 - a gateway fault is the agent's error reply and a logged event, not a dropped connection
            msg = self._redacted(f"sdebench gateway failed on this call: {_short(e)}")
            self.last_error = msg
            # a fault here is not the model's answer: the probe decides whether the model is alive
            self._failed(liveness.INFRASTRUCTURE, msg)
            self._log("model_error", protocol=route.protocol, error=msg, status=500)
            return self.error(route.protocol, 500, msg)

    async def _model_call(self, route: protocols.Route, raw: bytes) -> HTTPReply:
        t_in = time.perf_counter()
        protocol = route.protocol
        try:
            body = orjson.loads(raw or b"null")
            req = protocols.decode(route, body)
        except (ValueError, protocols.ProtocolError) as e:
            return self.error(protocol, 400, f"bad request: {e}", "invalid_request_error")
        if self.dead is not None:
            self._log("model_refused", protocol=protocol, stop_reason="error", reason=self.dead)
            return self.error(protocol, DEAD_STATUS, DEAD_MESSAGE, "not_found_error")
        max_tokens = self.model.max_tokens or req.max_tokens or DEFAULT_MAX_TOKENS
        try:
            ticket = self.meter.admit(req.prompt_chars(), max_tokens)
        except LimitReached as e:
            self._log("model_refused", protocol=protocol, stop_reason=e.stop_reason, reason=str(e))
            return self.error(protocol, 400, f"sdebench gateway refused the call: {e}", "invalid_request_error")
        try:
            return await self._forward(protocol, req, ticket, max_tokens, t_in)
        finally:
            self.meter.release(ticket)  # a no-op once the call is accounted; else its hold must not linger

    async def _forward(self, protocol: str, req: protocols.ChatRequest, ticket: Ticket, max_tokens: int,
                       t_in: float) -> HTTPReply:
        kwargs = self._upstream_kwargs(req, max_tokens)
        t_up = time.perf_counter()
        try:
            response = await self.upstream.complete(kwargs)
        except Exception as e:  # noqa: BLE001 - every upstream failure goes back to the agent, logged
            latency = time.perf_counter() - t_up
            self.meter.release(ticket, latency)
            msg = self._redacted(_short(e))
            self.last_error = msg
            self._failed(liveness.cause_of(liveness.status_of(e)), msg)
            self._log("model_error", protocol=protocol, n=ticket.n, error=msg, status=_status(e))
            await self._check_alive()
            return self.error(protocol, _status(e), f"upstream model error: {msg}")
        latency = time.perf_counter() - t_up
        try:
            account = self.meter.account(ticket, response, latency)
        except PricingError as e:
            self.last_error = str(e)
            self._failed(liveness.CONFIG, str(e))
            self._log("model_error", protocol=protocol, n=ticket.n, error=str(e), status=500)
            return self.error(protocol, 500, str(e))
        self.streak.answered()
        tokens = TokenCounts(account.prompt_tokens, account.completion_tokens, account.cached_tokens,
                             account.cache_write_tokens)
        reply = protocols.reply_from_response(response, tokens, self.model.name)
        self.meter.count_tools([c.name for c in reply.tool_calls])
        self.calls += 1
        out, events = protocols.encode(protocol, reply, req)
        self._log("model_call", n=ticket.n, protocol=protocol, stream=req.stream, messages=len(req.messages),
                  tools=len(req.tools), last_message=_clip(req.messages[-1]) if req.messages else None,
                  finish_reason=reply.finish_reason, text=_clip(reply.text) if reply.text else None,
                  tool_calls=[{"id": c.id, "name": c.name, "arguments": _clip(c.arguments)} for c in reply.tool_calls],
                  **account.to_dict(), total_cost_usd=self.meter.usage.cost_usd,
                  gateway_s=round(time.perf_counter() - t_in - latency, 6))
        if events is not None:
            # the whole reply is known: the stream goes out as one body
            return HTTPReply(200, b"".join(events), "text/event-stream", ((b"cache-control", b"no-cache"),))
        return HTTPReply(200, orjson.dumps(out))

    async def _check_alive(self) -> None:
        """After a failed call: once every call has failed for `dead_after_s` (0: from the first failure),
        probe the model; if the probe fails too, the model is dead and every later call is refused."""
        s = self.streak
        if self.dead is not None or self._probing or not s.suspect or s.age_s() < self.dead_after_s:
            return
        if self._probed_at is not None and time.monotonic() - self._probed_at < max(self.dead_after_s, 1.0):
            return
        import anyio

        self._probing, self._probed_at = True, time.monotonic()
        try:
            self.dead = await anyio.to_thread.run_sync(self.dead_model)
        finally:
            self._probing = False

    def dead_model(self) -> str | None:
        """Why the model is dead (every call failed since some point and the gateway's own probe fails
        too: sdebench.agents.liveness), or None; probes only while the model is a suspect, and not
        again when no call failed since a probe found it alive."""
        if self.dead is None and self._alive_after != self._failures:
            failures = self._failures
            reason = liveness.dead_model(self.streak, self._probe, self._log)
            self.dead = self._redacted(reason) if reason else None
            if self.dead:
                self._log("model_dead", reason=self.dead, failed_calls=self.streak.failed)
            elif self.streak.suspect:
                self._alive_after = failures
        return self.dead

    def _probe(self) -> liveness.Probe:
        return liveness.probe(self.model)

    def _failed(self, cause: str, error: str) -> None:
        self.streak.fail(cause, error)
        self._failures += 1

    def _upstream_kwargs(self, req: protocols.ChatRequest, max_tokens: int) -> dict[str, Any]:
        m = self.model
        kwargs: dict[str, Any] = {
            **m.extra,
            "model": m.litellm_model,
            "messages": req.messages,
            "max_tokens": max_tokens,
            "timeout": max(1.0, min(600.0, self.meter.wall_left())),
            "max_retries": 0,  # the agent retries on its own; each of its attempts is one metered call
            "num_retries": 0,
        }
        if req.tools:
            kwargs["tools"] = req.tools
            if req.tool_choice is not None:
                kwargs["tool_choice"] = req.tool_choice
        if m.api_base:
            kwargs["api_base"] = m.api_base
        if m.temperature is not None:
            kwargs["temperature"] = m.temperature
        if m.send_seed and self.seed is not None:
            kwargs["seed"] = self.seed
        key = m.api_key()
        if key is not None:
            kwargs["api_key"] = key
        return kwargs


class _ModelRoutes:
    """ASGI: the model routes (`protocols.route_of`) served straight (Starlette's request, routing and
    middleware layers cost ~0.3 ms of CPU and ~1 ms of latency a call); everything else goes to the
    Starlette app."""

    def __init__(self, gateway: Gateway, app: Any):
        self.gateway = gateway
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        route = protocols.route_of(scope.get("path", "")) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        problem = protocols.query_problem(route, scope.get("query_string", b"").decode("latin-1"))
        if scope["method"] != "POST":
            reply = self.gateway.error(route.protocol, 405, "use POST", "invalid_request_error", ((b"allow", b"POST"),))
        elif problem:
            reply = self.gateway.error(route.protocol, 400, problem, "invalid_request_error")
        else:
            chunks = []
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # the agent hung up: nothing to answer (and no model call made)
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            raw = b"".join(chunks)
            if route.count_tokens:
                reply = HTTPReply(200, orjson.dumps(protocols.count_tokens_body(route.protocol, raw)))
            else:
                reply = await self.gateway.model_call(route, raw)
        headers = [(b"content-type", reply.media_type.encode()), (b"content-length", str(len(reply.body)).encode()),
                   *reply.headers]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})


class _BodyLimit:
    """ASGI middleware: a request body over `limit` bytes is refused with 413 (by its declared length
    before any is read; a body without one is cut off where it crosses the limit)."""

    def __init__(self, app: Any, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await _plain(send, 413, f"sdebench gateway: request body over {self.limit} bytes")
            return
        seen = 0
        started = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                if not started:
                    await _plain(send, 413, f"sdebench gateway: request body over {self.limit} bytes")
                return {"type": "http.disconnect"}  # the app stops reading and answers nothing more
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                if seen > self.limit:
                    return  # the 413 went out instead
                started = True
            elif seen > self.limit and not started:
                return
            await send(message)

        await self.app(scope, limited_receive, tracked_send)


async def _plain(send: Any, status: int, message: str, kind: str = "invalid_request_error") -> None:
    body = json.dumps({"error": {"message": message, "type": kind}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class _TokenCheck:
    """ASGI middleware: every HTTP request must carry the episode token (as a bearer token, or in the
    key header of Anthropic's or Google's API)."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = {f"Bearer {token}".encode(), token.encode()}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = {headers.get(b"authorization", b""), headers.get(b"x-api-key", b""),
                     headers.get(b"x-goog-api-key", b"")}
            if not (given & self.expected):
                await _plain(send, 401, "sdebench gateway: missing or wrong token", "authentication_error")
                return
        await self.app(scope, receive, send)


def make_gateway(model: ModelSettings, pricing: Any, limits: Limits, started_at: float, log: Callable[..., None],
                 **kwargs: Any) -> Gateway:
    """A gateway metering `model` at `pricing` under `limits` (not started)."""
    return Gateway(model, Meter(pricing, limits, started_at), log, **kwargs)
