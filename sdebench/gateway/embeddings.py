"""POST /v1/embeddings on the gateway: OpenAI's embeddings API, forwarded to the gateway's model entry and metered.

The request's `input` (a string or a list of strings; token arrays are refused) and `dimensions` go to
litellm's embedding mapping on the gateway's model entry (its litellm model, address and key; the model
named in the request is ignored, as on the chat routes), one upstream call per request, never retried.
The reply is accounted by the gateway's meter like a chat call (its usage has prompt tokens only, priced
at the entry's input price) and logged as an `embedding_call` event; the vectors go back as floats, or
as base64 little-endian float32s when the request asks for `encoding_format: base64` (what the OpenAI
SDKs ask for by default).

A gateway serves one model entry, so the entry must be an embedding model: a system that needs a chat
model and an embedder (mem0) runs one gateway for each, each with its own meter.
"""

from __future__ import annotations

import base64
import struct
import time
from typing import Any

import orjson

from sdebench.agents.accounting import PricingError, import_litellm
from sdebench.agents.model import ModelSettings
from sdebench.errors import AgentError
from sdebench.gateway import protocols
from sdebench.gateway.meter import LimitReached
from sdebench.gateway.protocols import HTTPReply

PATHS = ("/v1/embeddings", "/embeddings")
MAX_INPUTS = 2048  # OpenAI's own cap on the inputs of one request


class EmbeddingRequestError(AgentError, ValueError):
    """An embeddings request that does not follow OpenAI's API."""


def parse_request(body: Any) -> tuple[list[str], int | None, str]:
    """The inputs, the asked dimensions (or None) and the encoding of a request body."""
    if not isinstance(body, dict):
        raise EmbeddingRequestError("the request body must be a JSON object")
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
        raise EmbeddingRequestError(
            "`input` must be a string or a non-empty list of strings (token arrays are not served)"
        )
    if len(inputs) > MAX_INPUTS:
        raise EmbeddingRequestError(f"at most {MAX_INPUTS} inputs a request")
    dims = body.get("dimensions")
    if dims is not None and (not isinstance(dims, int) or isinstance(dims, bool) or dims < 1):
        raise EmbeddingRequestError("`dimensions` must be a positive whole number")
    fmt = body.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        raise EmbeddingRequestError("`encoding_format` must be float or base64")
    return inputs, dims, fmt


async def upstream_embedding(
    model: ModelSettings, inputs: list[str], dims: int | None, timeout: float
) -> Any:
    """One litellm embedding call on the model entry (litellm's EmbeddingResponse, or its mapped exception)."""
    kwargs: dict[str, Any] = {
        "model": model.litellm_model,
        "input": inputs,
        "encoding_format": "float",
        "timeout": timeout,
        "max_retries": 0,  # the caller retries on its own; each of its attempts is one metered call
    }
    if dims is not None:
        # litellm refuses `dimensions` for an OpenAI model it does not know to take it; the upstream decides
        kwargs["dimensions"] = dims
        kwargs["allowed_openai_params"] = ["dimensions"]
    if model.api_base:
        kwargs["api_base"] = model.api_base
    key = model.api_key()
    if key is not None:
        kwargs["api_key"] = key
    return await import_litellm().aembedding(**kwargs)


def _redacted(gateway: Any, message: str) -> str:
    for secret in gateway.redact:
        message = message.replace(secret, "[REDACTED]")
    return message


def _vectors(response: Any) -> list[list[float]]:
    data = sorted(response.data, key=lambda d: d["index"] if isinstance(d, dict) else d.index)
    return [list(d["embedding"] if isinstance(d, dict) else d.embedding) for d in data]


def _encoded(vec: list[float], fmt: str) -> Any:
    return base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode() if fmt == "base64" else vec


async def embeddings_call(gateway: Any, raw: bytes) -> HTTPReply:
    """One embeddings request on `gateway` (a sdebench.gateway.server.Gateway): parsed, admitted, forwarded,
    accounted, logged; the HTTPReply to send."""
    chat = protocols.CHAT  # errors in OpenAI's shape
    try:
        inputs, dims, fmt = parse_request(orjson.loads(raw or b"null"))
    except (ValueError, EmbeddingRequestError) as e:
        return gateway.error(chat, 400, f"bad request: {e}", "invalid_request_error")
    if gateway.dead is not None:
        gateway.log("model_refused", protocol="embeddings", stop_reason="error", reason=gateway.dead)
        return gateway.error(
            chat,
            404,
            "sdebench gateway: the model is unreachable for the rest of this episode",
            "not_found_error",
        )
    meter = gateway.meter
    try:
        ticket = meter.admit(sum(len(t) for t in inputs), 0)
    except LimitReached as e:
        gateway.log("model_refused", protocol="embeddings", stop_reason=e.stop_reason, reason=str(e))
        return gateway.error(chat, 400, f"sdebench gateway refused the call: {e}", "invalid_request_error")
    t_up = time.perf_counter()
    try:
        try:
            response = await upstream_embedding(
                gateway.model, inputs, dims, max(1.0, min(600.0, meter.wall_left()))
            )
        except Exception as e:  # noqa: BLE001 - every upstream failure goes back to the caller, logged
            meter.release(ticket, time.perf_counter() - t_up)
            msg = _redacted(
                gateway,
                f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
                if str(e).strip()
                else type(e).__name__,
            )
            status = getattr(e, "status_code", None)
            status = status if isinstance(status, int) and 400 <= status <= 599 else 502
            gateway.log("model_error", protocol="embeddings", n=ticket.n, error=msg, status=status)
            return gateway.error(chat, status, f"upstream model error: {msg}")
        latency = time.perf_counter() - t_up
        try:
            account = meter.account(ticket, response, latency)
        except PricingError as e:
            gateway.log("model_error", protocol="embeddings", n=ticket.n, error=str(e), status=500)
            return gateway.error(chat, 500, str(e))
    finally:
        meter.release(ticket)  # a no-op once accounted
    vectors = _vectors(response)
    out = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": _encoded(v, fmt)} for i, v in enumerate(vectors)
        ],
        "model": gateway.model.name,
        "usage": {"prompt_tokens": account.prompt_tokens, "total_tokens": account.prompt_tokens},
    }
    gateway.log(
        "embedding_call",
        n=ticket.n,
        inputs=len(inputs),
        dimensions=len(vectors[0]) if vectors else 0,
        **account.to_dict(),
        total_cost_usd=meter.usage.cost_usd,
    )
    return HTTPReply(200, orjson.dumps(out))


def routes(gateway: Any) -> list[Any]:
    """The Starlette routes of POST /v1/embeddings (and /embeddings) on `gateway`."""
    from starlette.responses import Response
    from starlette.routing import Route

    async def endpoint(request: Any) -> Any:
        reply = await embeddings_call(gateway, await request.body())
        return Response(reply.body, reply.status, media_type=reply.media_type)

    return [Route(path, endpoint, methods=["POST"]) for path in PATHS]
