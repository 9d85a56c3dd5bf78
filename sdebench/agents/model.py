"""The model seam of the LLM agent: a `ModelClient` turns the conversation into one priced reply.

The agent loop (sdebench.agents.llm) builds messages and runs tools; a client builds the request,
retries transient failures within the episode's wall budget and accounts the reply (tokens, cost,
latency). `LiteLLMClient` reaches any provider through `litellm.completion` over HTTP;
`sdebench.testing.scripted.ScriptedClient` answers in-process from a test-model script, for unit
tests of the loop.

litellm is imported only when a model is first called (or priced), with the bundled price map
forced, so commands that never use this agent start fast and never touch the network.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sdebench.agents.accounting import (
    DEFAULT_MAX_TOKENS,
    CallAccount,
    Pricing,
    PricingError,
    account_call,
    import_litellm,
    known_prices,
    prompt_chars,
    resolve_pricing,
    worst_case_usd,
)
from sdebench.agents.liveness import CONFIG, Probe, cause_of, probe
from sdebench.errors import ConfigError

# a placeholder for OpenAI-compatible servers that need no key (the OpenAI client insists on one)
NO_KEY = "EMPTY"
RETRY_STATUS = {408, 409, 429}  # plus every 5xx
Log = Callable[..., None]  # trajectory.log(kind, **data)


@dataclass(frozen=True)
class ModelReply:
    """One usable reply: the assistant message as it goes back into the history, and its accounting."""

    message: dict[str, Any]  # OpenAI chat format: role, content, tool_calls (arguments as JSON text)
    finish_reason: str | None
    account: CallAccount


@dataclass
class Completion:
    """The outcome of one `ModelClient.complete` call."""

    reply: ModelReply | None = None
    error: str | None = None  # not retryable, retries exhausted, or a reply that could not be priced
    stop: str | None = None  # a limit hit while waiting to retry (max_wall)
    replied: bool = False  # the model did answer (a turn), even if the answer could not be used
    retries: int = 0  # failed attempts that were retried
    failed_s: float = 0.0  # seconds spent in failed attempts (counted as model time)
    # who the last failed attempt is blamed on (sdebench.agents.liveness.cause_of); None: none failed
    cause: str | None = None


@runtime_checkable
class ModelClient(Protocol):
    """Where the LLM agent's replies come from."""

    name: str  # the model's label in results

    def describe(self) -> dict[str, Any]:
        """What the trajectory's `agent_start` event says about the model (no secrets)."""
        ...

    def secrets(self) -> tuple[str, ...]:
        """Values that must never be written anywhere (the API key)."""
        ...

    def worst_case_usd(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> float:
        """The most the next call with `messages` and `tools` could cost (the agent never crosses its cost cap)."""
        ...

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int,
                 deadline: float, log: Log) -> Completion:
        """One reply to `messages` with `tools` offered; `deadline` is the time.monotonic() at which the
        episode's wall budget ends; `log` records retries and model errors. Never raises."""
        ...

    def probe(self) -> Probe:
        """Whether the model answers a fixed call of the harness's own (sdebench.agents.liveness)."""
        ...


@dataclass(frozen=True)
class RetrySettings:
    """Retries of one model call (`agent.retry`)."""

    max_retries: int = 6
    backoff_base_s: float = 2.0
    backoff_max_s: float = 60.0
    request_timeout_s: float = 600.0

    @classmethod
    def from_config(cls, d: Mapping[str, Any] | None) -> RetrySettings:
        """Read a `retry` block; an unknown key is a ConfigError."""
        r = dict(d or {})
        unknown = set(r) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"agent.retry has unknown key(s): {sorted(unknown)}")
        return cls(**r)

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Sleep before retry `attempt` (0-based): exponential, capped, jittered in [0.5, 1]."""
        return min(self.backoff_base_s * 2**attempt, self.backoff_max_s) * rng.uniform(0.5, 1.0)


GATEWAY_ROUTES = ("auto", "direct", "completion")


def _gateway_route(value: Any) -> str:
    route = "auto" if value is None else str(value)
    if route not in GATEWAY_ROUTES:
        raise ConfigError(f"model.gateway_route must be one of {', '.join(GATEWAY_ROUTES)}, got {value!r}")
    return route


@dataclass(frozen=True)
class ModelSettings:
    """One conf/model entry."""

    name: str
    litellm_model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = None
    send_seed: bool = False  # pass the episode's seed as `seed` (OpenAI, vLLM); Anthropic has no such parameter
    cost_tracking: str = "strict"  # strict: an unpriced model is refused; ignore: its calls cost 0
    prices: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # how the model gateway (installed agents) reaches it: auto | direct | completion (docs/agents.md)
    gateway_route: str = "auto"

    @classmethod
    def from_config(cls, d: Mapping[str, Any]) -> ModelSettings:
        """Read a model entry; a missing litellm model string is an error."""
        model = d.get("litellm_model")
        if not isinstance(model, str) or not model:
            raise ConfigError("model.litellm_model is required (a litellm model string such as openai/gpt-4.1-mini)")
        return cls(
            name=str(d.get("name") or model),
            litellm_model=model,
            api_base=d.get("api_base") or None,
            api_key_env=d.get("api_key_env") or None,
            temperature=d.get("temperature"),
            max_tokens=d.get("max_tokens"),
            send_seed=bool(d.get("send_seed", False)),
            cost_tracking=str(d.get("cost_tracking") or "strict"),
            prices=dict(d.get("prices") or {}),
            extra=dict(d.get("extra") or {}),
            gateway_route=_gateway_route(d.get("gateway_route")),
        )

    def api_key(self) -> str | None:
        """The key, read from the environment at call time (None: let litellm find one itself)."""
        if self.api_key_env is None:
            return NO_KEY if self.api_base else None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(f"model {self.name} needs the API key in env var {self.api_key_env}, which is unset")
        return key


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def retry_after_s(exc: BaseException) -> float:
    """The wait a rate-limited reply asks for (its `Retry-After` seconds), or 0 when it names none."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        raw = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(raw)) if raw is not None else 0.0
    except (TypeError, ValueError, AttributeError):
        return 0.0  # an HTTP date or junk: our own backoff decides


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, timeouts, connection failures and 5xx are worth retrying; other 4xx are not."""
    name = type(exc).__name__
    if name in ("Timeout", "APITimeoutError", "APIConnectionError", "ServiceUnavailableError",
                "InternalServerError", "RateLimitError", "BadGatewayError"):
        return True
    code = _status(exc)
    if code is None:
        return False
    return code in RETRY_STATUS or code >= 500


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def assistant_message(msg: Any) -> dict[str, Any]:
    """A reply's message (a provider object or a dict) as it goes back into the history (OpenAI format)."""
    out: dict[str, Any] = {"role": "assistant", "content": _get(msg, "content") if msg is not None else None}
    calls = []
    for i, tc in enumerate((_get(msg, "tool_calls") if msg is not None else None) or []):
        fn = _get(tc, "function")
        args = (_get(fn, "arguments") if fn is not None else None) or ""
        if not isinstance(args, str):  # some providers hand back an object; the history needs JSON text
            args = json.dumps(args)
        calls.append({
            "id": _get(tc, "id") or f"call_{i}",
            "type": "function",
            "function": {"name": (_get(fn, "name") if fn is not None else None) or "", "arguments": args},
        })
    if calls:
        out["tool_calls"] = calls
    elif not out["content"]:
        out["content"] = "(empty reply)"  # an assistant message needs content or tool calls to be resent
    blocks = _get(msg, "thinking_blocks") if msg is not None else None
    if blocks:  # Anthropic extended thinking must be echoed back alongside tool calls
        out["thinking_blocks"] = blocks
    return out


class LiteLLMClient:
    """A model reached through `litellm.completion`: request building, retries with backoff, pricing."""

    def __init__(self, model: ModelSettings, pricing: Pricing, retry: RetrySettings | None = None):
        self.model = model
        self.name = model.name
        self.pricing = pricing
        self.retry = retry or RetrySettings()
        self.rng = random.Random()

    @classmethod
    def from_config(cls, model: Mapping[str, Any], retry: Mapping[str, Any] | None = None) -> LiteLLMClient:
        """Build from a model entry (and the agent's `retry` block); raises ConfigError (one line) if unusable."""
        settings = ModelSettings.from_config(model)
        retry_settings = RetrySettings.from_config(retry)
        settings.api_key()  # fail now, not at the first call, if the key's env var is unset
        try:
            pricing = resolve_pricing(settings.litellm_model, settings.prices, settings.cost_tracking)
        except PricingError as e:
            raise ConfigError(str(e)) from None
        return cls(settings, pricing, retry_settings)

    def describe(self) -> dict[str, Any]:
        """Model name, litellm string, server and how calls are priced."""
        m = self.model
        return {"model": m.name, "litellm_model": m.litellm_model, "api_base": m.api_base, "pricing": self.pricing.mode}

    def secrets(self) -> tuple[str, ...]:
        """The key, if one is set in the environment."""
        key = os.environ.get(self.model.api_key_env) if self.model.api_key_env else None
        return (key,) if key else ()

    def probe(self) -> Probe:
        """Whether the model answers the harness's own 1-token call (sdebench.agents.liveness.probe)."""
        return probe(self.model)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced."""
        for s in self.secrets():
            text = text.replace(s, "[REDACTED]")
        return text

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], timeout: float,
                seed: int) -> dict[str, Any]:
        """The keyword arguments of one `litellm.completion` call."""
        m = self.model
        kwargs: dict[str, Any] = {
            **m.extra,
            "model": m.litellm_model,
            "messages": messages,
            "timeout": timeout,
            "max_retries": 0,  # retries are ours: counted, logged and bounded by the wall budget
            "num_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if m.api_base:
            kwargs["api_base"] = m.api_base
        if m.temperature is not None:
            kwargs["temperature"] = m.temperature
        # Always bounded: the cost cap is checked against this output cap before the call.
        kwargs["max_tokens"] = m.max_tokens or DEFAULT_MAX_TOKENS
        if m.send_seed:
            kwargs["seed"] = seed
        key = m.api_key()
        if key is not None:
            kwargs["api_key"] = key
        return kwargs

    def worst_case_usd(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> float:
        """The most the next call with `messages` and `tools` could cost (sdebench.agents.accounting.worst_case_usd)."""
        return worst_case_usd(known_prices(self.pricing), prompt_chars(messages, tools), self.model.max_tokens or DEFAULT_MAX_TOKENS)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int,
                 deadline: float, log: Log) -> Completion:
        """One model call with retries on transient failures; the reply accounted."""
        litellm = import_litellm()
        out = Completion()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                out.stop = "max_wall"
                return out
            try:
                kwargs = self.request(messages, tools, min(self.retry.request_timeout_s, left), seed)
            except ConfigError as e:
                out.error, out.cause = str(e), CONFIG
                return out
            t0 = time.monotonic()
            try:
                response = litellm.completion(**kwargs)
            except Exception as e:  # noqa: BLE001 - every failure is classified, logged and reported
                elapsed = time.monotonic() - t0
                out.failed_s += elapsed
                msg = self.redact(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
                out.cause = cause_of(_status(e))
                if not is_retryable(e):
                    log("model_error", error=msg, status=_status(e), retryable=False)
                    out.error = msg
                    return out
                if out.retries >= self.retry.max_retries:
                    log("model_error", error=msg, status=_status(e), retryable=True)
                    out.error = f"gave up after {out.retries} retries: {msg}"
                    return out
                # never sooner than the server asks (a rate limit's Retry-After), capped like the backoff
                sleep = max(self.retry.backoff(out.retries, self.rng),
                            min(retry_after_s(e), self.retry.backoff_max_s))
                if sleep >= deadline - time.monotonic():
                    out.stop = "max_wall"
                    return out
                out.retries += 1
                log("retry", attempt=out.retries, error=msg, status=_status(e), sleep_s=round(sleep, 3),
                    elapsed_s=round(elapsed, 3))
                time.sleep(sleep)
                continue
            latency = time.monotonic() - t0
            out.replied, out.cause = True, None
            try:
                account = account_call(self.pricing, response, latency)
            except PricingError as e:
                out.error, out.cause = str(e), CONFIG
                return out
            choices = _get(response, "choices")
            choice = choices[0] if choices else None
            message = assistant_message(_get(choice, "message") if choice is not None else None)
            out.reply = ModelReply(message, _get(choice, "finish_reason") if choice is not None else None, account)
            return out
