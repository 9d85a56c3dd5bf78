"""Token splitting and pricing of model calls."""

from __future__ import annotations

import pytest

from sdebench.agents.accounting import (
    CallAccount,
    Prices,
    PricingError,
    TokenCounts,
    add_call,
    litellm_prices,
    price_tokens,
    raw_usage,
    resolve_pricing,
    token_counts,
)
from sdebench.agents.base import Usage


def test_openai_usage_counts_cached_tokens_inside_the_prompt():
    usage = {"prompt_tokens": 2000, "completion_tokens": 300, "total_tokens": 2300,
             "prompt_tokens_details": {"cached_tokens": 1536}}
    t = token_counts(usage)
    assert t == TokenCounts(prompt=2000, completion=300, cached=1536, cache_write=0)
    assert t.uncached == 464


def test_anthropic_usage_cache_read_and_creation():
    # litellm's normalised Anthropic usage: prompt_tokens includes cache reads and cache writes
    usage = {"prompt_tokens": 5100, "completion_tokens": 80, "cache_read_input_tokens": 4000,
             "cache_creation_input_tokens": 1000}
    t = token_counts(usage)
    assert (t.cached, t.cache_write, t.uncached) == (4000, 1000, 100)


def test_missing_or_odd_usage_counts_zero():
    assert token_counts(None) == TokenCounts(0, 0, 0, 0)
    assert token_counts({"prompt_tokens": None, "completion_tokens": "12"}) == TokenCounts(0, 0, 0, 0)


def test_price_tokens_by_hand():
    p = Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    t = TokenCounts(prompt=5100, completion=80, cached=4000, cache_write=1000)
    # 100*3 + 4000*0.3 + 1000*3.75 + 80*15 = 300 + 1200 + 3750 + 1200 = 6450 per million
    assert price_tokens(p, t) == pytest.approx(0.00645, rel=1e-12)


def test_prices_from_config():
    assert Prices.from_config(None) is None
    assert Prices.from_config({"input": None, "output": 1}) is None
    assert Prices.from_config({"input": 2, "output": 8}) == Prices(2.0, 8.0, 2.0, 2.0)
    assert Prices.from_config({"input": 0, "output": 0, "cache_read": 0}) == Prices(0.0, 0.0, 0.0, 0.0)
    with pytest.raises(PricingError, match="must be numbers"):
        Prices.from_config({"input": "cheap", "output": 1})
    with pytest.raises(PricingError, match="negative"):
        Prices.from_config({"input": -1, "output": 1})


def test_resolve_pricing_modes():
    assert resolve_pricing("openai/anything", {"input": 1, "output": 2}).mode == "configured"
    assert resolve_pricing("openai/gpt-4o-mini", None).mode == "litellm"
    with pytest.raises(PricingError, match="has no price"):
        resolve_pricing("openai/not-a-real-model-123", {})
    assert resolve_pricing("openai/not-a-real-model-123", {}, "ignore").mode == "unpriced"
    with pytest.raises(PricingError, match="cost_tracking must be one of"):
        resolve_pricing("openai/gpt-4o-mini", None, "loose")


def test_litellm_prices_per_million():
    import litellm

    p = litellm_prices("openai/gpt-4o-mini")
    info = litellm.model_cost["gpt-4o-mini"]
    assert p is not None and p.input == pytest.approx(info["input_cost_per_token"] * 1e6)
    assert p.output == pytest.approx(info["output_cost_per_token"] * 1e6)
    assert litellm_prices("openai/not-a-real-model-123") is None


def test_add_call_accumulates():
    total = Usage()
    for _ in range(2):
        add_call(total, CallAccount(100, 10, 40, 5, 0.25, "configured", 0.5, {}))
    assert (total.model_calls, total.prompt_tokens, total.completion_tokens) == (2, 200, 20)
    assert (total.cached_tokens, total.cache_write_tokens) == (80, 10)
    assert total.cost_usd == pytest.approx(0.5) and total.model_s == pytest.approx(1.0)


def test_raw_usage_drops_empty_fields():
    assert raw_usage({"a": 1, "b": None, "_x": 2}) == {"a": 1}
    assert raw_usage(None) == {}
