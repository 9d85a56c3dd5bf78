"""POST /v1/embeddings on the gateway over real HTTP: forwarded to the scripted test model's embeddings,
metered at the entry's prices, the token checked, bad requests and upstream failures answered in OpenAI's shape."""

from __future__ import annotations

import socket
import time

import httpx
import openai
import pytest

from sdebench.agents.accounting import resolve_pricing
from sdebench.agents.base import Limits
from sdebench.agents.model import ModelSettings
from sdebench.gateway.server import make_gateway
from sdebench.testing import testmodel

PRICES = {"input": 0.5, "output": 0.0}  # USD per million tokens


def embedding_gateway(api_base: str, events: list, limits: Limits | None = None):
    model = ModelSettings.from_config(
        {"name": "embed-test", "litellm_model": "openai/embed-test", "api_base": api_base, "prices": PRICES}
    )
    pricing = resolve_pricing(model.litellm_model, model.prices)
    log = lambda kind, **d: events.append({"kind": kind, **d})  # noqa: E731
    return make_gateway(model, pricing, limits or Limits(), time.monotonic(), log).start(tcp=True)


def test_embeddings_are_forwarded_and_metered():
    events: list[dict] = []
    with (
        testmodel.in_thread(testmodel.parse_script([])) as srv,
        embedding_gateway(testmodel.base_url(srv), events) as gw,
    ):
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.token, max_retries=0)
        texts = ["invoices round toward zero", "the cache ttl is 417 seconds"]
        # floats, with the caller's size
        r = client.embeddings.create(model="anything", input=texts, dimensions=32, encoding_format="float")
        assert [d.embedding for d in r.data] == [testmodel.embed(t, 32) for t in texts]
        assert r.model == "embed-test" and r.usage.prompt_tokens == 4 + 6
        # the SDK's default asks for base64 and decodes it: the same vectors, at float32 precision
        r2 = client.embeddings.create(model="anything", input=texts[1])
        want = testmodel.embed(texts[1], testmodel.EMBEDDING_DIMS)
        assert max(abs(a - b) for a, b in zip(r2.data[0].embedding, want, strict=True)) < 1e-6
        usage = gw.meter.usage
        assert usage.model_calls == 2 and usage.prompt_tokens == 16 and usage.completion_tokens == 0
        assert usage.cost_usd == pytest.approx(16 * PRICES["input"] / 1e6)
        calls = [e for e in events if e["kind"] == "embedding_call"]
        assert [(c["inputs"], c["dimensions"], c["prompt_tokens"]) for c in calls] == [
            (2, 32, 10),
            (1, 256, 6),
        ]
        assert calls[-1]["cost_source"] == "configured"
        assert srv.model.embeddings == {"requests": 2, "inputs": 3, "tokens": 16}
        # no token, a malformed request: refused before the model is called
        with httpx.Client(base_url=gw.base_url, timeout=10) as c:
            assert c.post("/v1/embeddings", json={"input": "x"}).status_code == 401
            bad = c.post(
                "/embeddings", json={"input": [1, 2]}, headers={"Authorization": f"Bearer {gw.token}"}
            )
            assert bad.status_code == 400 and "token arrays" in bad.json()["error"]["message"]
        assert gw.meter.usage.model_calls == 2 and srv.model.embeddings["requests"] == 2


def test_a_limit_refuses_and_a_dead_upstream_is_an_error_that_costs_nothing():
    events: list[dict] = []
    with (
        testmodel.in_thread(testmodel.parse_script([])) as srv,
        embedding_gateway(testmodel.base_url(srv), events, Limits(max_turns=1)) as gw,
    ):
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.token, max_retries=0)
        client.embeddings.create(model="m", input="a b c")
        with pytest.raises(openai.BadRequestError, match="model-call limit"):
            client.embeddings.create(model="m", input="a b c")
        assert srv.model.embeddings["requests"] == 1 and events[-1]["kind"] == "model_refused"
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    events.clear()
    with embedding_gateway(dead, events) as gw:
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.token, max_retries=0)
        with pytest.raises(openai.APIStatusError) as e:
            client.embeddings.create(model="m", input="a")
        assert e.value.status_code >= 500 and "upstream model error" in e.value.message
        assert gw.meter.usage.model_calls == 0 and gw.meter.usage.cost_usd == 0.0
        assert [ev["kind"] for ev in events] == ["model_error"]
