"""Token and cost accounting of model calls.

Token convention (litellm's normalised usage, OpenAI style): `prompt_tokens` counts every input
token, including those read from the prompt cache (`cached`) and those written to it
(`cache_write`, Anthropic only). Configured prices are USD per million tokens and win over
litellm's price map.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from sdebench.agents.base import Usage
from sdebench.errors import AgentError

COST_TRACKING = ("strict", "ignore")
PER_TOKEN = 1e-6  # configured prices are per million tokens


class PricingError(AgentError, ValueError):
    """A model cannot be priced (and cost tracking is strict)."""


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    @classmethod
    def from_config(cls, d: Mapping[str, Any] | None) -> Prices | None:
        """Read a `prices` block; None when no prices are configured. Cache prices default to input."""
        if not d or d.get("input") is None or d.get("output") is None:
            return None
        vals = {k: d.get(k) for k in ("input", "output", "cache_read", "cache_write")}
        for k in ("cache_read", "cache_write"):
            if vals[k] is None:
                vals[k] = vals["input"]
        try:
            out = {k: float(v) for k, v in vals.items()}
        except (TypeError, ValueError):
            raise PricingError(f"prices must be numbers (USD per million tokens), got {dict(d)}") from None
        if any(v < 0 for v in out.values()):
            raise PricingError(f"prices must not be negative, got {dict(d)}")
        return cls(**out)


@dataclass(frozen=True)
class TokenCounts:
    """The tokens of one call, split the way they are billed."""

    prompt: int
    completion: int
    cached: int = 0
    cache_write: int = 0

    @property
    def uncached(self) -> int:
        """Input tokens billed at the full input price."""
        return max(self.prompt - self.cached - self.cache_write, 0)


@dataclass(frozen=True)
class Pricing:
    """How the calls of one model are priced."""

    model: str  # litellm model string
    mode: str  # configured | litellm | unpriced (model.cost_tracking=ignore and no price known)
    prices: Prices | None = None


@dataclass(frozen=True)
class CallAccount:
    """The accounting of one model call."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    cost_usd: float
    cost_source: str  # configured | litellm | unpriced
    latency_s: float
    raw_usage: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _int(v: Any) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def token_counts(usage: Any) -> TokenCounts:
    """Split a usage record (dict or litellm Usage) into prompt / completion / cached / cache-write tokens.

    Cached: OpenAI `prompt_tokens_details.cached_tokens`, else Anthropic `cache_read_input_tokens`.
    Cache write: Anthropic `cache_creation_input_tokens` (litellm also mirrors it into the details).
    """
    details = _get(usage, "prompt_tokens_details")
    cached = _int(_get(details, "cached_tokens")) or _int(_get(usage, "cache_read_input_tokens"))
    write = (
        _int(_get(usage, "cache_creation_input_tokens"))
        or _int(_get(details, "cache_creation_tokens"))
        or _int(_get(details, "cache_write_tokens"))
    )
    return TokenCounts(
        prompt=_int(_get(usage, "prompt_tokens")),
        completion=_int(_get(usage, "completion_tokens")),
        cached=cached,
        cache_write=write,
    )


def price_tokens(prices: Prices, t: TokenCounts) -> float:
    """The cost of `t` at configured per-million prices."""
    return PER_TOKEN * (
        t.uncached * prices.input
        + t.cached * prices.cache_read
        + t.cache_write * prices.cache_write
        + t.completion * prices.output
    )


CHARS_PER_TOKEN = 3  # a cautious prompt estimate (English and code run ~4 characters a token)
DEFAULT_MAX_TOKENS = 4096  # output cap when neither the model entry nor the request sets one


def known_prices(pricing: Pricing) -> Prices | None:
    """The per-million prices a pricing charges at (None: unpriced)."""
    if pricing.mode == "configured":
        return pricing.prices
    if pricing.mode == "litellm":
        return litellm_prices(pricing.model)
    return None


def prompt_chars(messages: Any, tools: Any) -> int:
    """The size of a prompt (messages and tool schemas) for the estimate before a call: bytes of their
    compact JSON, so a non-ASCII character counts 2-4 (the estimate errs high)."""
    return len(orjson.dumps(messages, default=str)) + len(orjson.dumps(tools, default=str))


def worst_case_usd(prices: Prices | None, prompt_chars: int, max_tokens: int) -> float:
    """The most one call could cost: its prompt (estimated from its size) at the input price plus
    `max_tokens` at the output price. The one rule both the built-in agent and the gateway apply
    before a call, so neither ever crosses an episode's cost cap."""
    if prices is None:
        return 0.0
    return price_tokens(prices, TokenCounts(prompt=prompt_chars // CHARS_PER_TOKEN + 1, completion=max_tokens))


def raw_usage(usage: Any) -> dict[str, Any]:
    """The usage record as a plain JSON-ready dict, without empty fields."""
    if usage is None:
        return {}
    if hasattr(usage, "model_dump"):
        usage = usage.model_dump(exclude_none=True)
    elif not isinstance(usage, Mapping):
        usage = dict(vars(usage))
    return {k: v for k, v in dict(usage).items() if v is not None and not k.startswith("_")}


def import_litellm() -> Any:
    """Import litellm with the bundled price map (never fetched) and its request logging kept quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    # request details (headers, bodies) must stay out of a run's log files
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "httpcore", "openai"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


def litellm_prices(model: str) -> Prices | None:
    """litellm's prices for `model`, or None if it does not know them (zero prices count as unknown)."""
    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model=model)
    except Exception:  # noqa: BLE001 - litellm raises assorted types for an unmapped model
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    # a hosted model listed at $0 is a stale map entry, not a free model; local servers configure 0
    if not inp or not out:
        return None
    read = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    return Prices(
        input=inp / PER_TOKEN,
        output=out / PER_TOKEN,
        cache_read=(read if read is not None else inp) / PER_TOKEN,
        cache_write=(write if write is not None else inp) / PER_TOKEN,
    )


def resolve_pricing(model: str, prices: Mapping[str, Any] | None, cost_tracking: str = "strict") -> Pricing:
    """Decide how `model` is priced; raise PricingError for an unpriced model unless cost_tracking=ignore."""
    if cost_tracking not in COST_TRACKING:
        raise PricingError(f"cost_tracking must be one of {', '.join(COST_TRACKING)}, got {cost_tracking!r}")
    configured = Prices.from_config(prices)
    if configured is not None:
        return Pricing(model, "configured", configured)
    if litellm_prices(model) is not None:
        return Pricing(model, "litellm")
    if cost_tracking == "ignore":
        return Pricing(model, "unpriced")
    raise PricingError(
        f"model {model!r} has no price: litellm does not know it and no prices are configured "
        "(set model.prices.input/output per million tokens, or model.cost_tracking=ignore)"
    )


def call_cost(pricing: Pricing, response: Any, tokens: TokenCounts) -> tuple[float, str]:
    """The cost of one reply and where it came from; raises PricingError if litellm cannot price it."""
    if pricing.mode == "configured" and pricing.prices is not None:
        return price_tokens(pricing.prices, tokens), "configured"
    if pricing.mode == "unpriced":
        return 0.0, "unpriced"
    litellm = import_litellm()
    try:
        cost = litellm.completion_cost(completion_response=response, model=pricing.model)
    except Exception as e:  # noqa: BLE001 - any pricing failure becomes one clear error
        raise PricingError(f"litellm cannot price a reply of {pricing.model}: {str(e).splitlines()[0][:200]}") from None
    return float(cost or 0.0), "litellm"


def account_call(pricing: Pricing, response: Any, latency_s: float) -> CallAccount:
    """Account one model reply (tokens, cost, latency)."""
    usage = _get(response, "usage")
    tokens = token_counts(usage)
    cost, source = call_cost(pricing, response, tokens)
    return CallAccount(
        prompt_tokens=tokens.prompt,
        completion_tokens=tokens.completion,
        cached_tokens=tokens.cached,
        cache_write_tokens=tokens.cache_write,
        cost_usd=cost,
        cost_source=source,
        latency_s=latency_s,
        raw_usage=raw_usage(usage),
    )


def add_call(total: Usage, call: CallAccount) -> None:
    """Add one call to the running totals of an episode."""
    total.model_calls += 1
    total.prompt_tokens += call.prompt_tokens
    total.completion_tokens += call.completion_tokens
    total.cached_tokens += call.cached_tokens
    total.cache_write_tokens += call.cache_write_tokens
    total.cost_usd += call.cost_usd
    total.model_s += call.latency_s
