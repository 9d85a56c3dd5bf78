"""Whether a failed call is the model's or the agent's, and whether the model is dead (sdebench.agents.liveness),
against the real test model server: answering, failing for good (503 forever), and gone (its port closed)."""

from __future__ import annotations

import time

import pytest

from sdebench.agents import liveness
from sdebench.agents.liveness import Probe, Streak, cause_of, dead_model
from sdebench.agents.model import ModelSettings
from sdebench.testing import testmodel

KEY_ENV = "SDEBENCH_TEST_LIVENESS_KEY"
TEXT = {"text": "hello"}


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-liveness")


def model(base: str) -> ModelSettings:
    return ModelSettings.from_config({"name": "t", "litellm_model": "openai/testmodel", "api_base": base,
                                      "api_key_env": KEY_ENV})


@pytest.mark.parametrize(("status", "cause"), [(None, "infrastructure"), (500, "infrastructure"), (502, "infrastructure"),
                                               (503, "infrastructure"), (529, "infrastructure"), (429, "infrastructure"),
                                               (408, "infrastructure"), (401, "infrastructure"), (403, "infrastructure"),
                                               (404, "infrastructure"), (400, "request"), (413, "request"),
                                               (422, "request")])
def test_which_failed_calls_are_the_infrastructures(status, cause):
    assert cause_of(status) == cause


def test_a_streak_is_the_failures_since_the_last_answer():
    s = Streak()
    assert not s.suspect and s.age_s() == 0.0
    s.fail("infrastructure", "503")
    time.sleep(0.01)
    s.fail("infrastructure", "503 again")
    assert s.suspect and s.failed == 2 and s.last_error == "503 again" and s.age_s() >= 0.01
    s.fail("request", "prompt is too long")  # the last failure decides: the model answered the request
    assert not s.suspect
    s.answered()
    assert (s.failed, s.cause, s.since) == (0, None, None)


def test_the_probe_decides_only_for_a_suspect():
    calls = []

    def check(alive: bool):
        def f():
            calls.append(alive)
            return Probe(alive, None if not alive else 200, None if alive else "refused")
        return f

    events = []
    s = Streak()
    assert dead_model(s, check(False)) is None and calls == []  # no failure: nothing to probe
    s.fail("request", "prompt is too long")
    assert dead_model(s, check(False)) is None and calls == []  # the agent's request: no probe either
    s.fail("config", "no price for the model")
    assert "cannot be used" in dead_model(s, check(True)) and calls == []  # a broken set-up needs none
    s.answered()
    s.fail("infrastructure", "APIConnectionError: refused")
    assert dead_model(s, check(True), lambda k, **d: events.append((k, d))) is None  # alive after all: not dead
    why = dead_model(s, check(False), lambda k, **d: events.append((k, d)))
    assert calls == [True, False] and "failed every call since some point" in why and "refused" in why
    assert [(k, d["alive"]) for k, d in events] == [("model_probe", True), ("model_probe", False)]


def test_the_probe_against_a_model_that_answers_fails_for_good_and_is_gone(key):
    with testmodel.in_thread(testmodel.parse_script([TEXT, {"outage": 503}])) as srv:
        m = model(testmodel.base_url(srv))
        p = liveness.probe(m, timeout_s=5)
        assert p.alive and p.status == 200 and srv.model.requests == []  # answered without a step
        srv.model.reset(testmodel.parse_script([{"outage": 503}]))
        p = liveness.probe(m, timeout_s=5)
        assert p.alive  # the outage starts at the step that declares it, not before
        import urllib.request

        req = urllib.request.Request(testmodel.base_url(srv) + "/chat/completions", data=b'{"model": "t", "messages": '
                                     b'[{"role": "user", "content": "hi"}]}', headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 503
        p = liveness.probe(m, timeout_s=5)
        assert not p.alive and p.status == 503 and srv.model.probes[-1]["outage"]
        # an answer refusing the probe still shows a model that answers
        srv.model.reset(testmodel.parse_script([{"outage": 400}]))
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(req, timeout=5)
        assert liveness.probe(m, timeout_s=5).alive
        # gone: the call that meets the death gets no answer, and the port is closed after it
        srv.model.reset(testmodel.parse_script([{"outage": "dead"}]))
        with pytest.raises(Exception):  # noqa: B017 - the connection dies unanswered (RemoteDisconnected or reset)
            urllib.request.urlopen(req, timeout=5)
        time.sleep(0.3)
        p = liveness.probe(m, timeout_s=5)
        assert not p.alive and p.status in (None, 500) and "Connection" in p.error  # litellm maps it to a 500


def test_a_bad_outage_step_is_refused():
    with pytest.raises(testmodel.ScriptError, match="outage must be"):
        testmodel.parse_script([{"outage": "soon"}])
