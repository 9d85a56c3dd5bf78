"""The litellm model client over real HTTP against the scripted test model server: requests,
retries and backoff, error classes, pricing, and its config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sdebench.agents.llm import LLMAgent
from sdebench.agents.model import ConfigError, LiteLLMClient, is_retryable
from sdebench.agents.trajectory import Trajectory, read
from sdebench.testing import testmodel

CONF = Path(__file__).resolve().parents[2] / "conf"
KEY_ENV = "SDEBENCH_TEST_LLM_KEY"
FAKE_KEY = "sk-test-PLANTED-5f1c0ffee"
PRICES = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}
MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "total() is off by one"}]
TOOLS = [{"type": "function", "function": {"name": "submit", "description": "submit",
                                           "parameters": {"type": "object", "properties": {}, "required": []}}}]
FAST_RETRY = {"max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "request_timeout_s": 5.0}


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text())


def model_cfg(api_base: str, **model: Any) -> dict[str, Any]:
    return {"name": "scripted", "litellm_model": "openai/testmodel", "api_base": api_base, "api_key_env": KEY_ENV,
            "temperature": 0.0, "max_tokens": 256, "prices": dict(PRICES), **model}


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


class Server:
    """A scripted server in this process, and a client of it."""

    def __init__(self, tmp: Path, steps: list[dict[str, Any]], retry: dict[str, Any] | None = None, **model: Any):
        self.ctx = testmodel.in_thread(testmodel.parse_script(steps))
        self.url = testmodel.base_url(self.ctx.__enter__())
        self.client = LiteLLMClient.from_config(model_cfg(self.url, **model), retry or FAST_RETRY)
        self.traj_path = tmp / "traj.jsonl"
        self.traj = Trajectory(self.traj_path, redact=(FAKE_KEY,))

    def complete(self, wall_s: float = 60.0, seed: int = 0):
        return self.client.complete(MESSAGES, TOOLS, seed=seed, deadline=time.monotonic() + wall_s, log=self.traj.log)

    def requests(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/requests") as r:
            return json.loads(r.read())

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in read(self.traj_path) if e["kind"] == kind]


@pytest.fixture
def server(tmp_path, key):
    made: list[Server] = []

    def make(steps, retry=None, **model):
        s = Server(tmp_path, steps, retry, **model)
        made.append(s)
        return s

    yield make
    for s in made:
        s.ctx.__exit__(None, None, None)


EDIT = {"tool": "edit_file", "arguments": {"path": "calc.py", "old_string": "+ 1", "new_string": ""},
        "usage": {"prompt_tokens": 1500, "completion_tokens": 60, "cached_tokens": 1000}}


def test_a_reply_is_requested_parsed_and_priced(server):
    s = server([EDIT])
    c = s.complete()
    assert c.error is None and c.stop is None and c.replied and c.retries == 0
    msg = c.reply.message
    assert msg["role"] == "assistant" and msg["tool_calls"] == [{"id": "call_1_0", "type": "function", "function": {
        "name": "edit_file", "arguments": json.dumps(EDIT["arguments"])}}]
    assert c.reply.finish_reason == "tool_calls"
    a = c.reply.account
    assert (a.prompt_tokens, a.completion_tokens, a.cached_tokens) == (1500, 60, 1000)
    assert a.cost_usd == pytest.approx((500 * 3.0 + 1000 * 0.3 + 60 * 15.0) / 1e6, rel=1e-12)
    assert a.cost_source == "configured" and a.latency_s > 0
    (req,) = s.requests()
    body = req["body"]
    assert body["model"] == "testmodel" and body["max_tokens"] == 256 and body["messages"] == MESSAGES
    assert [t["function"]["name"] for t in body["tools"]] == ["submit"] and "seed" not in body
    assert req["authorization"] == f"Bearer {FAKE_KEY}"  # the key went to the server, read from the env var


def test_a_rate_limit_and_a_5xx_are_retried(server):
    s = server([{"error": 429}, {"error": 503}, EDIT])
    c = s.complete()
    assert c.reply is not None and c.retries == 2 and c.failed_s > 0
    assert [e["status"] for e in s.events("retry")] == [429, 503] and len(s.requests()) == 3


def test_timeouts_are_retried(server):
    s = server([{**EDIT, "delay_s": 1.5}, EDIT], retry={**FAST_RETRY, "request_timeout_s": 0.5})
    c = s.complete()
    assert c.reply is not None and c.retries == 1


def test_retries_give_up_with_an_error(server):
    s = server([{"error": 500, "repeat": True}])
    c = s.complete()
    assert c.reply is None and "gave up after 3 retries" in c.error and len(s.requests()) == 4
    assert s.events("model_error")[0]["retryable"] is True
    assert c.cause == "infrastructure"  # the model server kept failing: a suspect of death


@pytest.mark.parametrize("status", [400, 401])
def test_client_errors_are_not_retried_and_the_key_is_redacted(server, status):
    s = server([{"error": status, "message": f"bad request {FAKE_KEY}"}, EDIT])
    c = s.complete()
    assert c.reply is None and not c.replied and "bad request" in c.error
    assert FAKE_KEY not in c.error and "[REDACTED]" in c.error
    assert len(s.requests()) == 1 and c.retries == 0
    assert FAKE_KEY not in s.traj_path.read_text()
    # the entry's key refused is the infrastructure's; a request refused as such may be the agent's doing
    assert c.cause == ("infrastructure" if status == 401 else "request")


def test_backoff_never_outlives_the_wall_budget(server):
    s = server([{"error": 503, "repeat": True}], retry={**FAST_RETRY, "max_retries": 10, "backoff_base_s": 5.0,
                                                         "backoff_max_s": 5.0})
    t0 = time.monotonic()
    assert s.complete(wall_s=1.0).stop == "max_wall"
    assert time.monotonic() - t0 < 1.0 and len(s.requests()) == 1


def test_the_episode_seed_is_sent_when_configured(server):
    s = server([EDIT], send_seed=True)
    assert s.complete(seed=7).reply is not None
    assert s.requests()[0]["body"]["seed"] == 7


def test_an_unreachable_server_is_retried_then_reported(tmp_path, key):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LiteLLMClient.from_config(model_cfg(f"http://127.0.0.1:{port}/v1"), FAST_RETRY)
    c = client.complete(MESSAGES, TOOLS, seed=0, deadline=time.monotonic() + 60, log=Trajectory(None).log)
    assert c.reply is None and "gave up after 3 retries" in c.error and "Connection" in c.error and c.retries == 3
    assert c.cause == "infrastructure"
    probe = client.probe()  # nobody answers the harness's own call either: the model is dead
    assert not probe.alive and "Connection" in probe.error


def test_litellm_prices_a_model_it_knows(server):
    import litellm

    usage = {"prompt_tokens": 10_000, "completion_tokens": 1_000, "cached_tokens": 4_000}
    s = server([{**EDIT, "usage": usage}], litellm_model="openai/gpt-4o-mini", prices=None)
    assert s.client.pricing.mode == "litellm"
    a = s.complete().reply.account
    info = litellm.model_cost["gpt-4o-mini"]
    hand = (6_000 * info["input_cost_per_token"] + 4_000 * info["cache_read_input_token_cost"]
            + 1_000 * info["output_cost_per_token"])
    assert a.cost_usd == pytest.approx(hand, rel=1e-9) and a.cost_source == "litellm"


def test_an_unpriced_model_is_refused_unless_cost_tracking_is_ignore(key):
    cfg = model_cfg("http://127.0.0.1:9/v1", litellm_model="openai/unknown-model-xyz", prices={"input": None})
    with pytest.raises(ConfigError, match="has no price"):
        LiteLLMClient.from_config(cfg)
    assert LiteLLMClient.from_config({**cfg, "cost_tracking": "ignore"}).pricing.mode == "unpriced"
    with pytest.raises(ConfigError, match="cost_tracking must be one of strict, ignore"):
        LiteLLMClient.from_config({**cfg, "cost_tracking": "lax"})


def test_config_errors_are_one_line(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"env var {KEY_ENV}"):
        LiteLLMClient.from_config(model_cfg("http://127.0.0.1:9/v1"))
    monkeypatch.setenv(KEY_ENV, "x")
    with pytest.raises(ConfigError, match="litellm_model"):
        LiteLLMClient.from_config({"name": "m"})
    with pytest.raises(ConfigError, match="agent.retry has unknown key"):
        LiteLLMClient.from_config(model_cfg("http://127.0.0.1:9/v1"), {"retries": 3})
    agent = _yaml(CONF / "agent" / "llm.yaml")
    agent["prompts"]["instance"] = "{statment}"
    with pytest.raises(ConfigError, match="unknown field"):
        LLMAgent.from_config({"agent": agent, "model": model_cfg("http://127.0.0.1:9/v1")})


def test_the_shipped_model_configs_build_their_client(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SDEBENCH_TESTMODEL_KEY"):
        monkeypatch.setenv(var, "x")
    agent_cfg = _yaml(CONF / "agent" / "llm.yaml")
    modes = {}
    for name in ("openai", "anthropic", "local", "testmodel"):
        a = LLMAgent.from_config({"agent": agent_cfg, "model": _yaml(CONF / "model" / f"{name}.yaml")})
        modes[name] = a.client.pricing.mode
        assert a.client.model.cost_tracking == "strict"
    assert modes == {"openai": "litellm", "anthropic": "litellm", "local": "configured", "testmodel": "configured"}


def test_error_classes():
    class Status(Exception):
        def __init__(self, code):
            self.status_code = code

    assert [is_retryable(Status(c)) for c in (408, 409, 429, 500, 503, 400, 401, 404)] == [True] * 5 + [False] * 3
    assert not is_retryable(ValueError("x"))


def test_importing_the_package_does_not_import_litellm():
    code = (
        "import sys, importlib\n"
        "mods = ['sdebench.agents', 'sdebench.agents.llm', 'sdebench.agents.model', 'sdebench.agents.accounting',\n"
        "        'sdebench.testing.testmodel', 'sdebench.testing.scripted', 'sdebench.components',\n"
        "        'sdebench.runs.run', 'sdebench.runs.episode', 'sdebench.agents.tools']\n"
        "for m in mods: importlib.import_module(m)\n"
        "import sdebench.components as c\n"
        "c.resolve('agent', 'llm')\n"
        "assert 'litellm' not in sys.modules, sorted(k for k in sys.modules if 'litellm' in k)[:5]\n"
        "print('clean')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "clean"


def test_the_gateway_route_is_read_and_checked():
    from sdebench.agents.model import ConfigError, ModelSettings

    assert ModelSettings.from_config({"litellm_model": "openai/m"}).gateway_route == "auto"
    assert ModelSettings.from_config({"litellm_model": "openai/m", "gateway_route": "completion"}).gateway_route == "completion"
    with pytest.raises(ConfigError, match="gateway_route must be one of auto, direct, completion"):
        ModelSettings.from_config({"litellm_model": "openai/m", "gateway_route": "fast"})
