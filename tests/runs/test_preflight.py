"""Pre-flight: config completeness, a 1-token call to the real test model server, a dead port, the sandbox."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from sdebench.runs import preflight
from sdebench.runs.config import settings
from sdebench.sandbox import unsafe_local_factory
from sdebench.testing import testmodel
from tests.runs.test_run import common, env
from tests.runs.test_run import tasks as tasks

KEY_ENV = "SDEBENCH_TESTMODEL_KEY"


def dead_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_cfg(base: str) -> dict:
    return {"name": "testmodel", "litellm_model": "openai/testmodel", "api_base": base, "api_key_env": KEY_ENV,
            "prices": {"input": 3.0, "output": 15.0}}


def test_probe_answers_without_using_the_script(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    with testmodel.in_thread(testmodel.parse_script([{"tool": "submit", "arguments": {}}])) as srv:
        base = testmodel.base_url(srv)
        latency = preflight.probe_model(model_cfg(base))
        root = base.removesuffix("/v1")
        probes = json.loads(urllib.request.urlopen(root + "/probes", timeout=10).read())
        reqs = json.loads(urllib.request.urlopen(root + "/requests", timeout=10).read())
    assert latency >= 0
    assert len(probes) == 1 and probes[0]["body"]["max_tokens"] == 1 and reqs == []


def test_dead_port_is_one_line_within_seconds(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    t0 = time.monotonic()
    with pytest.raises(preflight.PreflightError) as e:
        preflight.probe_model(model_cfg(f"http://127.0.0.1:{dead_port()}/v1"), timeout_s=5)
    assert time.monotonic() - t0 < 10
    msg = str(e.value)
    assert "\n" not in msg and "did not answer a 1-token call" in msg and "preflight.model=false" in msg


def test_sandbox_probe_runs_echo(tmp_path):
    factory = unsafe_local_factory()
    preflight.probe_sandbox(factory)  # raises if `echo ok` does not come back


def test_model_agent_without_model_is_refused():
    from sdebench.agents.base import Capabilities
    from sdebench.agents.reference import OracleAgent

    class NeedsModel:
        capabilities = Capabilities(uses_model=True)

    with pytest.raises(preflight.PreflightError, match="model=NAME"):
        preflight.check_config(settings({"agent": {"name": "llm"}, "model": {"name": "none"}}), NeedsModel)
    preflight.check_config(settings({"agent": {"name": "oracle"}, "model": {"name": "none"}}), OracleAgent)
    with pytest.raises(preflight.PreflightError, match="agent object declares no capabilities"):
        preflight.check_config(settings({"agent": {"name": "x"}, "model": {"name": "none"}}), object)


def run(args, cwd, extra_env=None):
    return subprocess.run([sys.executable, "-m", "sdebench.run", *args], cwd=cwd, capture_output=True, text=True,
                          env={**env(), KEY_ENV: "k", **(extra_env or {})}, timeout=300)


def test_run_against_dead_endpoint_exits_2_before_any_episode(tmp_path, tasks):
    base = f"http://127.0.0.1:{dead_port()}/v1"
    t0 = time.monotonic()
    r = run([*common(tmp_path, tasks), "agent=llm", "model=testmodel", f"model.api_base={base}", "source=K",
             "preflight.timeout_s=5"], tmp_path)
    assert r.returncode == 2, r.stderr
    errs = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(errs) == 1 and "pre-flight: model testmodel" in errs[0], r.stderr
    assert not list((tmp_path / "results").rglob("*.json"))
    assert time.monotonic() - t0 < 120  # the import of litellm dominates; no 90 s of retries


def test_llm_without_model_fails_at_start_up(tmp_path, tasks):
    r = run([*common(tmp_path, tasks), "agent=llm", "source=K"], tmp_path)
    assert r.returncode == 2 and "agent llm calls a model: choose one with model=NAME" in r.stderr, r.stderr
    assert not list((tmp_path / "results").rglob("*.json"))


def test_preflight_model_false_skips_the_call(tmp_path, tasks):
    base = f"http://127.0.0.1:{dead_port()}/v1"
    r = run([*common(tmp_path, tasks), "agent=llm", "model=testmodel", f"model.api_base={base}", "source=K",
             "preflight.model=false", "agent.retry.max_retries=0"], tmp_path)
    # no pre-flight: the episode itself meets the dead server and is recorded as an error
    assert r.returncode == 1 and "pre-flight" not in r.stderr and "ended in an error" in r.stderr, r.stderr
    assert len(list((tmp_path / "results").rglob("*.json"))) == 1
