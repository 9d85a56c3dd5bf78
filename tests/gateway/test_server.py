"""The gateway over real HTTP: each protocol, streamed or not, through litellm to the scripted test
model; metering, limits (refused before the model is called), the token, upstream errors, MCP."""

from __future__ import annotations

import json
import re
import socket
import time

import httpx
import pytest

from sdebench.agents.accounting import resolve_pricing
from sdebench.agents.base import Limits
from sdebench.agents.model import ModelSettings
from sdebench.gateway.server import make_gateway
from sdebench.testing import testmodel

PRICES = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}
TOOL = {"name": "Bash", "description": "run", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}


def step(tool: str | None = None, p: int = 1000, c: int = 50, k: int = 200) -> dict:
    body = {"tool": tool, "arguments": {"command": "ls"}} if tool else {"text": "done"}
    return {**body, "usage": {"prompt_tokens": p, "completion_tokens": c, "cached_tokens": k}}


def cost(p: int, c: int, k: int) -> float:
    return ((p - k) * PRICES["input"] + k * PRICES["cache_read"] + c * PRICES["output"]) / 1e6


@pytest.fixture(scope="module")
def upstream():
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        yield srv


def gateway(upstream, limits: Limits | None = None, anthropic: bool = False, events: list | None = None, **kw):
    base = testmodel.base_url(upstream)
    model = ModelSettings.from_config({"name": "gw-test", "litellm_model": "anthropic/testmodel" if anthropic else "openai/testmodel",
                                       "api_base": base.removesuffix("/v1") if anthropic else base, "prices": PRICES,
                                       "max_tokens": 100})
    log = (lambda kind, **d: events.append({"kind": kind, **d})) if events is not None else (lambda kind, **d: None)
    return make_gateway(model, resolve_pricing(model.litellm_model, model.prices), limits or Limits(), time.monotonic(),
                        log, **kw).start(tcp=True)


def _events(body: str) -> list[dict]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


ANTHROPIC_REQ = {"model": "x", "max_tokens": 500, "messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]}
CHAT_REQ = {"model": "x", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "Bash", "parameters": TOOL["input_schema"]}}]}
OTHER_TOOLS_REQ = {"model": "x", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}],
                   "tools": [{"type": "function", "function": {"name": n, "parameters": {
                       "type": "object", "properties": {"q": {"type": "string", "pattern": p}}}}}
                             for n, p in (("Grep", "(?<name>x)"), ("Edit", "^[a-z]+$"))]}
RESPONSES_REQ = {"model": "x", "input": "hi", "tools": [{"type": "function", "name": "Bash", "parameters": TOOL["input_schema"]}]}
GEMINI_REQ = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
              "tools": [{"functionDeclarations": [{"name": "Bash", "parametersJsonSchema": TOOL["input_schema"]}]}]}
GEMINI_PATH = "/v1beta/models/x:generateContent"
GEMINI_STREAM = "/v1beta/models/x:streamGenerateContent?alt=sse"


# an OpenAI-compatible or Anthropic entry at a given address takes the direct route (litellm's
# provider config, the gateway's client), unless told to use litellm.completion
@pytest.mark.parametrize(("anthropic_upstream", "route"), [(False, "auto"), (False, "completion"), (True, "auto"),
                                                          (True, "completion")])
@pytest.mark.parametrize("stream", [False, True])
def test_each_protocol_forwards_and_meters_exactly(upstream, stream, anthropic_upstream, route):
    events: list[dict] = []
    upstream.model.reset(testmodel.parse_script([step("Bash", 1000, 50, 200), step("Bash", 1200, 60, 300),
                                                 step("Bash", 1400, 70, 400), step("Bash", 1600, 80, 500)]))
    with gateway(upstream, anthropic=anthropic_upstream, events=events, route=route) as gw:
        assert gw.upstream.name == ("completion" if route == "completion" else "direct")
        h = {"Authorization": f"Bearer {gw.token}"}
        with httpx.Client(base_url=gw.base_url, timeout=30) as c:
            r1 = c.post("/v1/messages", json={**ANTHROPIC_REQ, "stream": stream}, headers={"x-api-key": gw.token})
            r2 = c.post("/v1/chat/completions", json={**CHAT_REQ, "stream": stream}, headers=h)
            r3 = c.post("/v1/responses", json={**RESPONSES_REQ, "stream": stream}, headers=h)
            r4 = c.post(GEMINI_STREAM if stream else GEMINI_PATH, json=GEMINI_REQ, headers={"x-goog-api-key": gw.token})
        assert [r.status_code for r in (r1, r2, r3, r4)] == [200] * 4, [r.text for r in (r1, r2, r3, r4)]
        if stream:
            a = _events(r1.text)
            assert a[0]["type"] == "message_start" and a[-1]["type"] == "message_stop"
            assert [e["content_block"]["name"] for e in a if e["type"] == "content_block_start"] == ["Bash"]
            assert a[0]["message"]["usage"]["cache_read_input_tokens"] == 200
            ch = _events(r2.text)
            assert ch[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "Bash"
            rs = _events(r3.text)
            assert rs[-1]["type"] == "response.completed" and rs[-1]["response"]["output"][0]["name"] == "Bash"
            assert rs[-1]["response"]["usage"]["input_tokens"] == 1400
            gm = _events(r4.text)
            assert r4.headers["content-type"].startswith("text/event-stream") and len(gm) == 1
            g = gm[0]
        else:
            assert r1.json()["content"][0]["name"] == "Bash" and r1.json()["usage"]["input_tokens"] == 800
            assert r2.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "Bash"
            assert r3.json()["output"][0]["type"] == "function_call"
            g = r4.json()
        assert g["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "Bash"
        assert g["usageMetadata"] == {"promptTokenCount": 1600, "candidatesTokenCount": 80, "totalTokenCount": 1680,
                                      "cachedContentTokenCount": 500}
        u = gw.usage
        assert (u.model_calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (4, 5200, 260, 1400)
        assert u.cost_usd == pytest.approx(cost(1000, 50, 200) + cost(1200, 60, 300) + cost(1400, 70, 400)
                                           + cost(1600, 80, 500), rel=1e-12)
    calls = [e for e in events if e["kind"] == "model_call"]
    assert [e["protocol"] for e in calls] == ["anthropic", "chat", "responses", "gemini"]
    assert [e["stream"] for e in calls] == [stream] * 4
    assert [e["tool_calls"][0]["name"] for e in calls] == ["Bash"] * 4
    # the upstream got the configured output cap, not the agent's
    assert all(r["body"]["max_tokens"] == 100 for r in upstream.model.requests)


def test_a_request_without_the_token_is_refused(upstream):
    upstream.model.reset(testmodel.parse_script([step()]))
    with gateway(upstream) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        assert c.post("/v1/chat/completions", json=CHAT_REQ).status_code == 401
        assert c.post("/v1/chat/completions", json=CHAT_REQ, headers={"Authorization": "Bearer sdb-wrong"}).status_code == 401
        assert c.get("/v1/models").status_code == 401
    assert upstream.model.requests == []


def test_the_call_that_could_cross_the_cost_limit_is_refused_not_paid(upstream):
    # each call costs ~$0.00321; the worst case of the next one (prompt estimate + 100 output tokens at $15/M) is checked
    upstream.model.reset(testmodel.parse_script([{**step(), "repeat": True}]))
    events: list[dict] = []
    with gateway(upstream, Limits(max_cost_usd=0.0075), events=events) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        codes = [c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code for _ in range(4)]
        assert codes == [200, 200, 400, 400]
        assert gw.meter.stop_reason == "max_cost" and gw.usage.model_calls == 2
        assert gw.usage.cost_usd <= 0.0075
    assert len(upstream.model.requests) == 2  # refused calls never reached the model
    assert [e["stop_reason"] for e in events if e["kind"] == "model_refused"] == ["max_cost", "max_cost"]


def test_the_model_call_and_wall_limits(upstream):
    upstream.model.reset(testmodel.parse_script([{**step(), "repeat": True}]))
    with gateway(upstream, Limits(max_turns=2)) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        codes = [c.post("/v1/messages", json=ANTHROPIC_REQ, headers=h).status_code for _ in range(3)]
        assert codes == [200, 200, 400] and gw.meter.stop_reason == "max_turns"
    with gateway(upstream, Limits(max_wall_s=0.0)) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        r = c.post("/v1/messages", json=ANTHROPIC_REQ, headers={"x-api-key": gw.token})
        assert r.status_code == 400 and r.json()["type"] == "error" and gw.meter.stop_reason == "max_wall"


def test_failed_calls_are_not_turns(upstream):
    upstream.model.reset(testmodel.parse_script([{"error": 503}, {"error": 429}, {**step(), "repeat": True}]))
    with gateway(upstream, Limits(max_turns=2)) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        codes = [c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code for _ in range(5)]
        assert codes == [503, 429, 200, 200, 400] and gw.meter.stop_reason == "max_turns"
        assert gw.usage.model_calls == 2 and gw.dead_model() is None  # the model answered last: alive


def test_a_model_that_fails_every_call_for_long_enough_is_dead_and_refused(upstream):
    """Calls failing for `dead_after_s` and a probe of the gateway's own failing too: the model is dead,
    later calls are refused at once (a status every CLI gives up on), unpaid and never sent."""
    upstream.model.reset(testmodel.parse_script([step(), {"outage": 503}]))
    events: list[dict] = []
    with gateway(upstream, events=events, dead_after_s=0.3) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        codes = [c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code]
        codes.append(c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code)
        time.sleep(0.35)
        codes.append(c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code)  # trips the probe
        refused = c.post("/v1/messages", json=ANTHROPIC_REQ, headers=h)
        assert codes == [200, 503, 503] and refused.status_code == 404
        message = refused.json()["error"]["message"]
        # nothing of the upstream error in it: a CLI reading "503" or "unavailable" there retries a 404 too
        assert "the model is unreachable" in message and not re.search(r"503|unavailable|connection", message, re.I)
        assert gw.usage.model_calls == 1 and gw.usage.cost_usd == pytest.approx(cost(1000, 50, 200))
        assert "failed every call since some point" in gw.dead_model()
    assert len(upstream.model.requests) == 3  # the refused call never reached the model
    probes = [e for e in events if e["kind"] == "model_probe"]
    assert len(probes) == 1 and probes[0]["alive"] is False and probes[0]["failed_calls"] == 2
    assert [e["kind"] for e in events if e["kind"] in ("model_dead", "model_refused")] == ["model_dead", "model_refused"]


def test_failures_a_live_model_answers_the_probe_through_are_not_a_death(upstream):
    """Requests that keep failing while the model answers the gateway's own probe (what an agent could
    provoke with requests of its own making): the model is alive and nothing is refused."""
    upstream.model.reset(testmodel.parse_script([step(), {"error": 503, "message": "cannot handle this", "repeat": True}]))
    events: list[dict] = []
    with gateway(upstream, events=events, dead_after_s=0.0) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        codes = [c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code for _ in range(4)]
        assert codes == [200, 503, 503, 503] and gw.dead_model() is None
    assert [e["alive"] for e in events if e["kind"] == "model_probe"][:1] == [True]
    assert [e["failed_calls"] for e in events if e["kind"] == "model_probe"][:1] == [1]  # at the first failure
    assert not [e for e in events if e["kind"] in ("model_dead", "model_refused")]


def test_a_model_found_alive_is_probed_again_only_after_another_failure(upstream):
    """The end of each run asks whether the model is dead: a probe that found it alive is not repeated
    until another call has failed."""
    upstream.model.reset(testmodel.parse_script([step(), {"error": 503, "repeat": True}]))
    events: list[dict] = []
    with gateway(upstream, events=events, dead_after_s=3600) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        codes = [c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code for _ in range(3)]
        assert codes == [200, 503, 503] and not [e for e in events if e["kind"] == "model_probe"]  # not yet 3600 s
        assert gw.dead_model() is None and gw.dead_model() is None
        assert c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code == 503
        assert gw.dead_model() is None and gw.dead_model() is None
    probes = [e for e in events if e["kind"] == "model_probe"]
    assert [(e["alive"], e["failed_calls"]) for e in probes] == [(True, 2), (True, 3)]
    assert len(upstream.model.probes) == 2


@pytest.mark.parametrize("anthropic_upstream", [False, True])
@pytest.mark.parametrize("route", ["direct", "completion"])
@pytest.mark.parametrize("status", [503, 429])
def test_an_upstream_failure_goes_back_to_the_agent_unpaid(upstream, route, status, anthropic_upstream):
    upstream.model.reset(testmodel.parse_script([{"error": status, "message": "overloaded"}]))
    with gateway(upstream, anthropic=anthropic_upstream, route=route) as gw, \
            httpx.Client(base_url=gw.base_url, timeout=30) as c:
        r = c.post("/v1/responses", json=RESPONSES_REQ, headers={"Authorization": f"Bearer {gw.token}"})
        # the status goes through (a 429 is the agent's to retry), as litellm maps it
        assert r.status_code == status and "overloaded" in r.json()["error"]["message"]
        assert gw.usage.model_calls == 0 and gw.usage.cost_usd == 0 and "overloaded" in gw.last_error


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("route", ["direct", "completion"])
def test_a_dead_model_server_is_a_clear_error(route, provider):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = ModelSettings.from_config({"name": "gw-test", "litellm_model": f"{provider}/testmodel", "prices": PRICES,
                                       "api_base": f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")})
    events: list[dict] = []
    with make_gateway(model, resolve_pricing(model.litellm_model, model.prices), Limits(), time.monotonic(),
                      lambda kind, **d: events.append({"kind": kind, **d}), route=route).start(tcp=True) as gw, \
            httpx.Client(base_url=gw.base_url, timeout=30) as c:
        r = c.post("/v1/chat/completions", json=CHAT_REQ, headers={"Authorization": f"Bearer {gw.token}"})
        # litellm.completion says "Connection error."; the direct route names the address it could not reach
        assert r.status_code >= 500 and "connect" in r.json()["error"]["message"].lower()
        assert "connect" in gw.last_error.lower() and gw.usage.model_calls == 0
    assert [e["kind"] for e in events] == ["model_error"]


def test_the_route_of_a_model_entry():
    from sdebench.gateway.upstream import route_for

    base = "http://127.0.0.1:8000/v1"
    assert route_for("openai/m", base, {}).name == "direct"
    assert route_for("hosted_vllm/m", base, {"temperature": 0.2}).name == "direct"
    assert route_for("openai/m", base, {}, "completion").name == "completion"
    assert route_for("anthropic/claude-sonnet-4-5", None, {}).name == "completion"  # the address litellm resolves
    assert route_for("anthropic/m", base.removesuffix("/v1"), {}).api_base == "http://127.0.0.1:8000/v1/messages"
    assert route_for("anthropic/m", base.removesuffix("/v1"), {"api_version": "x"}).name == "completion"
    assert route_for("openai/gpt-4.1-mini", None, {}).name == "completion"  # OpenAI's own address: the SDK's
    assert route_for("openai/m", base, {"api_version": "x"}).name == "completion"  # a key litellm.completion reads
    with pytest.raises(ValueError, match="no direct route"):
        route_for("anthropic/claude-sonnet-4-5", None, {}, "direct")
    with pytest.raises(ValueError, match="auto, direct or completion"):
        route_for("openai/m", base, {}, "fast")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_direct_route_builds_the_request_litellm_builds(upstream, provider, monkeypatch):
    # the same entry, once through litellm.completion and once direct: the model receives the same
    # request (body, path, key and Anthropic headers), and the replies are metered the same
    upstream.model.reset(testmodel.parse_script([{**step("Bash"), "repeat": True}]))
    monkeypatch.setenv("SDB_TEST_KEY", "k-123")
    base = testmodel.base_url(upstream)
    model = {"name": "gw-test", "litellm_model": f"{provider}/testmodel",
             "api_base": base if provider == "openai" else base.removesuffix("/v1"), "api_key_env": "SDB_TEST_KEY",
             "prices": PRICES, "max_tokens": 100, "temperature": 0.3, "extra": {"top_p": 0.9, "stop": ["END"]}}
    bodies, usage = [], []
    for route in ("completion", "direct"):
        settings = ModelSettings.from_config(model)
        with make_gateway(settings, resolve_pricing(settings.litellm_model, settings.prices), Limits(), time.monotonic(),
                          lambda kind, **d: None, route=route, seed=7).start(tcp=True) as gw, \
                httpx.Client(base_url=gw.base_url, timeout=30) as c:
            before = len(upstream.model.requests)
            # the second call repeats the first's parameters (the direct route's kept mapping), the
            # third has other tools, one with a pattern litellm drops, and a system message
            for path, req in (("/v1/messages", ANTHROPIC_REQ), ("/v1/messages", ANTHROPIC_REQ),
                              ("/v1/chat/completions", OTHER_TOOLS_REQ)):
                r = c.post(path, json=req, headers={"x-api-key": gw.token})
                assert r.status_code == 200, r.text
            bodies.append([{k: x[k] for k in ("path", "body", "authorization", "x_api_key", "anthropic_headers")}
                           for x in upstream.model.requests[before:]])
            u = gw.usage
            usage.append((u.model_calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_write_tokens,
                          u.cost_usd))
    assert len(bodies[1]) == 3
    assert bodies[0] == bodies[1]
    assert usage[0] == usage[1] and usage[1][0] == 3
    first, _, other = (b["body"] for b in bodies[1])
    assert first["temperature"] == 0.3 and first["top_p"] == 0.9 and first["max_tokens"] == 100
    if provider == "openai":
        assert [t["function"]["name"] for t in other["tools"]] == ["Grep", "Edit"]
        assert other["messages"][0]["role"] == "system"
    else:
        assert bodies[1][0]["path"].endswith("/v1/messages") and bodies[1][0]["x_api_key"] == "k-123"
        assert bodies[1][0]["anthropic_headers"]["anthropic-version"]
        assert [t["name"] for t in other["tools"]] == ["Grep", "Edit"] and "be brief" in json.dumps(other["system"])


def test_the_direct_route_keeps_one_mapping_per_parameter_set():
    from sdebench.gateway.upstream import OPTIONAL_CACHE, route_for

    route = route_for("openai/m", "http://127.0.0.1:9/v1", {}, "direct")
    msgs = [{"role": "user", "content": "hi"}]
    params = {"max_tokens": 100, "tools": CHAT_REQ["tools"]}
    first = route.optional_params(params, msgs)
    first["tool_choice"] = "auto"  # a provider config may set keys on what it is given
    again = route.optional_params(dict(params), msgs)
    assert "tool_choice" not in again and again == route.optional_params(params, msgs)
    assert len(route._optional) == 1
    assert route.optional_params({**params, "max_tokens": 7}, msgs)["max_tokens"] == 7
    for n in range(OPTIONAL_CACHE + 5):
        route.optional_params({"max_tokens": 1000 + n}, msgs)
    assert len(route._optional) == OPTIONAL_CACHE


def test_the_memory_tool_over_mcp_goes_through_the_toolbox(upstream, tmp_path):
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from sdebench.agents.trajectory import Trajectory, read
    from sdebench.delivery.bm25 import DESCRIPTION, Bm25Memory
    from sdebench.delivery.memory import MemoryItem

    traj = Trajectory(tmp_path / "t.jsonl")

    class Box:  # the toolbox's memory path only: what an MCP call must reach
        def __init__(self):
            from sdebench.agents.tools import Toolbox

            self.inner = Toolbox.__new__(Toolbox)
            Toolbox.__init__(self.inner, sandbox=None, tools=("memory_search",), trajectory=traj,
                             memory=Bm25Memory.of([
                                 MemoryItem(id="K:docs/policy.md", source="K", title="policy", text="Invoices round half down."),
                                 MemoryItem(id="K:docs/cache.md", source="K", title="cache", text="The cache keeps entries."),
                                 MemoryItem(id="H:abc", source="H", title="tidy", text="Tidy imports of the parser.")]))

        def names(self):
            return self.inner.names()

        def schemas(self):
            return self.inner.schemas()

        def memory_names(self):
            return self.inner.memory_names()

        def call(self, name, args):
            return self.inner.call(name, args)

    box = Box()
    events: list[dict] = []
    with gateway(upstream, toolbox=box, events=events) as gw:
        async def use() -> tuple[list[str], str]:
            headers = {"Authorization": f"Bearer {gw.token}"}
            async with httpx.AsyncClient(headers=headers, timeout=30) as http, \
                    streamable_http_client(f"{gw.base_url}/mcp", http_client=http) as (read_s, write_s, *_), \
                    ClientSession(read_s, write_s) as session:
                await session.initialize()
                tools = await session.list_tools()
                out = await session.call_tool("memory_search", {"query": "invoices round"})
                return [(t.name, t.description, t.input_schema["required"]) for t in tools.tools], out.content[0].text

        listed, text = anyio.run(use)
        # the same search for the in-sandbox command: same text for the same query, logged and counted alike
        h = {"Authorization": f"Bearer {gw.token}"}
        with httpx.Client(base_url=gw.base_url, timeout=30) as c:
            r = c.post("/memory_search", json={"query": "invoices round"}, headers=h)
            assert r.status_code == 200 and r.json() == {"output": text, "error": False}
            assert c.post("/memory_search", json={"query": "invoices round"}).status_code == 401  # the token first
            bad = c.post("/memory_search", content=b"[1]", headers=h)
            assert bad.status_code == 400 and bad.json()["error"] is True
            assert c.post("/memory_search", json={"k": 2}, headers=h).json()["error"] is True  # no query
    # the memory system's own tool, as it declares it (name, description, schema)
    assert listed == [("memory_search", DESCRIPTION, ["query"])] and "half down" in text
    assert box.inner.stats()["tool_calls"] == {"memory_search": 3}
    ev = [e for e in read(tmp_path / "t.jsonl") if e["kind"] == "tool"]
    assert len(ev) == 3 and {e["name"] for e in ev} == {"memory_search"} and ev[0]["output"] == ev[1]["output"]
    assert [e["kind"] for e in events if e["kind"].endswith("_call")] == ["mcp_call", "command_call", "command_call"]


def test_the_memory_command_prints_what_the_tool_returns(upstream, tmp_path):
    """The in-sandbox `memory_search` command (sdebench/gateway/memory_command.py, run as a program over
    the gateway's unix socket, as it runs in the sandbox) prints exactly the tool's output."""
    import shutil
    import subprocess
    import sys

    from sdebench.agents.tools import Toolbox
    from sdebench.delivery.bm25 import DESCRIPTION, Bm25Memory
    from sdebench.delivery.memory import MemoryItem
    from sdebench.gateway import mcp_memory

    box = Toolbox(None, ("memory_search",), Bm25Memory.of([
        MemoryItem(id="F:1", source="F", title="rounding", text="Invoices round half down to quarters."),
        MemoryItem(id="K:docs/cache.md", source="K", title="cache", text="The cache keeps entries.")]))
    gw_dir = tmp_path / "gw"
    (gw_dir / "bin").mkdir(parents=True)
    command = gw_dir / "bin" / "memory_search"
    shutil.copyfile(mcp_memory.__file__.replace("mcp_memory.py", "memory_command.py"), command)
    with gateway(upstream, toolbox=box.view()) as gw:
        gw.stop()  # listen on a unix socket instead, as in the sandbox
        gw.start(socket_path=gw_dir / "gw.sock")
        (gw_dir / "memory_search.json").write_text(json.dumps({
            "socket": str(gw_dir / "gw.sock"), "path": mcp_memory.COMMAND_PATH, "token": gw.token,
            "description": DESCRIPTION}))
        run = subprocess.run([sys.executable, str(command), "-k", "1", "invoices", "round"], capture_output=True,
                             text=True, timeout=60)
        expected = box.call("memory_search", {"query": "invoices round", "k": 1}).output
        usage = subprocess.run([sys.executable, str(command), "--help"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected + "\n" and "half down" in run.stdout and "cache" not in run.stdout
    assert "Search the project's memory" in usage.stdout and str(tmp_path) not in usage.stdout


def test_a_gemini_entry_goes_through_litellm_completion_and_meters_exactly(upstream, monkeypatch):
    monkeypatch.setenv("SDEBENCH_TESTMODEL_KEY", "sk-gemini-upstream")
    upstream.model.reset(testmodel.parse_script([step("Bash", 1000, 50, 200), step(None, 1200, 60, 300)]))
    base = testmodel.base_url(upstream).removesuffix("/v1") + "/v1beta"
    model = ModelSettings.from_config({"name": "gw-test", "litellm_model": "gemini/testmodel", "api_base": base,
                                       "api_key_env": "SDEBENCH_TESTMODEL_KEY", "prices": PRICES, "max_tokens": 100})
    gw = make_gateway(model, resolve_pricing(model.litellm_model, model.prices), Limits(), time.monotonic(),
                      lambda kind, **d: None).start(tcp=True)
    with gw, httpx.Client(base_url=gw.base_url, timeout=60) as c:
        assert gw.upstream.name == "completion"
        r1 = c.post(GEMINI_STREAM, json=GEMINI_REQ, headers={"x-goog-api-key": gw.token})
        r2 = c.post("/v1/chat/completions", json=CHAT_REQ, headers={"Authorization": f"Bearer {gw.token}"})
        assert [r1.status_code, r2.status_code] == [200, 200], (r1.text, r2.text)
        assert _events(r1.text)[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "Bash"
        u = gw.usage
        assert (u.model_calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (2, 2200, 110, 500)
        assert u.cost_usd == pytest.approx(cost(1000, 50, 200) + cost(1200, 60, 300), rel=1e-12)
    got = upstream.model.requests
    assert [q["path"] for q in got] == ["/v1beta/models/testmodel:generateContent"] * 2
    # the entry's key went upstream; the agent's token did not
    assert all(gw.token not in json.dumps(q) for q in got)
    assert all("sk-gemini-upstream" in (q["x_goog_api_key"] or "") for q in got)


def test_the_gemini_routes_token_stream_query_and_token_count(upstream):
    upstream.model.reset(testmodel.parse_script([step()]))
    with gateway(upstream) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        g = {"x-goog-api-key": gw.token}
        assert c.post(GEMINI_PATH, json=GEMINI_REQ, headers={"x-goog-api-key": "sdb-wrong"}).status_code == 401
        # a stream is served as server-sent events only, in the agent's protocol's error shape otherwise
        r = c.post("/v1beta/models/x:streamGenerateContent", json=GEMINI_REQ, headers=g)
        assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT" and "alt=sse" in r.text
        r = c.post("/v1beta/models/x:countTokens", json=GEMINI_REQ, headers=g)
        assert r.status_code == 200 and r.json()["totalTokens"] >= 1
        r = c.post("/v1/messages/count_tokens", json=ANTHROPIC_REQ, headers=g)
        assert r.status_code == 200 and r.json()["input_tokens"] >= 1
        r = c.post(GEMINI_PATH, json={"contents": "hi"}, headers=g)
        assert r.status_code == 400 and r.json()["error"]["code"] == 400
        # a field of the wrong type deep inside is the agent's bad request (400), not a gateway fault (500)
        r = c.post(GEMINI_PATH, json={"contents": [], "tools": 1}, headers=g)
        assert r.status_code == 400 and "malformed request" in r.json()["error"]["message"]
        r = c.post("/v1/chat/completions", json={"messages": [], "tools": True}, headers={"Authorization": f"Bearer {gw.token}"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
        assert c.post("/v1beta/models/x:embedContent", json=GEMINI_REQ, headers=g).status_code == 404
        assert gw.calls == 0
    assert upstream.model.requests == []  # none of these reached the model


def test_a_request_body_over_the_limit_is_refused_unread(upstream, monkeypatch):
    from sdebench.gateway import server

    monkeypatch.setattr(server, "MAX_BODY_BYTES", 50_000)
    upstream.model.reset(testmodel.parse_script([{**step(), "repeat": True}]))
    big = {**CHAT_REQ, "messages": [{"role": "user", "content": "x" * 60_000}]}
    with gateway(upstream) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        h = {"Authorization": f"Bearer {gw.token}"}
        r = c.post("/v1/chat/completions", json=big, headers=h)
        assert r.status_code == 413 and "request body over 50000 bytes" in r.text
        # without a declared length (chunked), cut off where it crosses the limit
        chunks = (b"x" * 10_000 for _ in range(8))
        r = c.post("/v1/chat/completions", content=chunks, headers=h)
        assert r.status_code == 413
        # whatever the route: the declared length is checked before anything is read
        assert c.post("/v1beta/models/m:countTokens", content=b"x" * 60_000, headers=h).status_code == 413
        # under the limit all is as before
        assert c.post("/v1/chat/completions", json=CHAT_REQ, headers=h).status_code == 200
        assert gw.calls == 1
    assert len(upstream.model.requests) == 1


def test_a_model_route_takes_post_only(upstream):
    with gateway(upstream) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        r = c.get("/v1/messages", headers={"x-api-key": gw.token})
        assert r.status_code == 405 and r.headers["allow"] == "POST"
        assert r.json()["error"]["message"] == "use POST"
        assert gw.calls == 0


def test_a_fault_in_the_gateway_is_an_error_reply_and_a_logged_event(upstream, monkeypatch):
    events: list = []
    with gateway(upstream, events=events) as gw, httpx.Client(base_url=gw.base_url, timeout=30) as c:
        def broken(req, max_tokens):  # the gateway's own code failing after admission, as a bug would
            raise KeyError("no such field")
        monkeypatch.setattr(gw, "_upstream_kwargs", broken)
        r = c.post("/v1/messages", json=ANTHROPIC_REQ, headers={"x-api-key": gw.token})
    assert r.status_code == 500
    assert r.json() == {"type": "error", "error": {"type": "api_error", "message":
                        "sdebench gateway failed on this call: KeyError: 'no such field'"}}
    assert [e["kind"] for e in events] == ["model_error"] and events[0]["status"] == 500
    assert gw.last_error.endswith("KeyError: 'no such field'")
    assert gw.meter._reserved == 0.0  # the failed call holds nothing of the cost budget


def test_the_heap_imported_before_the_first_gateway_is_out_of_the_collector(upstream):
    import gc

    with gateway(upstream):
        # litellm's objects, imported before any gateway: a full collection over them would stall a call
        assert gc.get_freeze_count() > 100_000


@pytest.mark.memory
def test_the_knowledge_graphs_own_tools_over_mcp(upstream, tasks_dir, tmp_path):
    """memory=kg: the gateway's MCP server lists the graph server's tools as it declares them, and a call
    goes through the toolbox to the real server, seen by the retrieval tracker."""
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from sdebench.agents.tools import Toolbox
    from sdebench.delivery.decisive import decisive_items
    from sdebench.memory.kg import KnowledgeGraphMemory
    from sdebench.runs.retrieval import RetrievalTracker
    from tests.memory.corpus import corpus

    task, items, decisive = corpus(tasks_dir, tmp_path / "repo")
    kg = KnowledgeGraphMemory(timeout_s=60)
    kg.load(items, tmp_path / "state")
    try:
        tracker = RetrievalTracker(decisive_items(task), workspace=None, memory=kg)
        box = Toolbox(None, tuple(t.name for t in kg.tools()), kg, observer=tracker)
        with gateway(upstream, toolbox=box.view()) as gw:
            async def use():
                async with httpx.AsyncClient(headers={"Authorization": f"Bearer {gw.token}"}, timeout=30) as http, \
                        streamable_http_client(f"{gw.base_url}/mcp", http_client=http) as (read_s, write_s, *_), \
                        ClientSession(read_s, write_s) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    out = await session.call_tool("open_nodes", {"names": [decisive]})
                    found = await session.call_tool("search_nodes", {"query": "rounding"})
                    return {t.name: t.description for t in tools.tools}, out.content[0].text, found.content[0].text

            listed, opened, found = anyio.run(use)
            assert not gw.has_memory or httpx.post(f"{gw.base_url}/memory_search", json={"query": "x"},
                                                   headers={"Authorization": f"Bearer {gw.token}"}).status_code == 404
        assert listed == {t.name: t.description for t in kg.tools()} and "search_nodes" in listed
        assert decisive in opened and box.stats()["tool_calls"] == {"open_nodes": 1, "search_nodes": 1}
        assert [s.tool for s in tracker.result.searches] == ["search_nodes"]  # open_nodes reads, it does not search
    finally:
        kg.close()
