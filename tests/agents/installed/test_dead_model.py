"""A model that dies mid-episode, behind every installed agent: its server process killed (later
connections refused) or answering 503 forever (one of the two per CLI, both kinds in all).
Whatever the CLI then does (retries, gives up, exits with an error or 0), the episode is an error
(no outcome: kept out of every rate, rerun by `retry_errors`), the failed calls are neither turns
nor paid, and nothing prints it as unresolved.

Each episode runs with `agent.dead_model_s=0`: the gateway probes the model at the first failed
call, declares it dead when its own probe fails too, and refuses later calls at once, so no CLI
retries a dead model for minutes (the default waits 60 s of failures before it probes)."""

from __future__ import annotations

import json
import os

import pytest

from sdebench.runs.jobs import outcome
from sdebench.runs.record import EpisodeRecord
from sdebench.runs.rules import is_error, outcome_label
from sdebench.tasks.record import load
from sdebench.testing import testmodel
from tests.agents.installed.helpers import KEY_ENV, PLANTED, ROOT, api_base_for, compose, episode, usage
from tests.agents.installed.test_episodes import AGENTS, PRESET_OVERRIDES, PRESETS, SED_RIGHT, SED_WRONG, TASK

pytestmark = [pytest.mark.slow, pytest.mark.agents]

# one step each CLI acts on (its own tool, or aider's request for a file), so the model has acted
# before it dies and the CLI makes another call
ACT = {
    "claude-code": {"tool": "Bash", "arguments": {"command": SED_WRONG, "description": "round half up"}},
    "codex": {"tool": "exec_command", "arguments": {"cmd": SED_WRONG}},
    # the right fix: a workspace that resolves when graded is no outcome either once the model died
    "mini-swe-agent": {"tool": "bash", "arguments": {"command": f"{SED_WRONG} && {SED_RIGHT}"}},
    "qwen-code": {"tool": "read_file", "arguments": {"file_path": "/repo/invoicer/money.py"}},
    "opencode": {"tool": "bash", "arguments": {"command": SED_WRONG, "description": "round half up"}},
    "aider": {"text": "The rounding lives in invoicer/money.py; please add it to the chat."},
    "gemini-cli": {"tool": "run_shell_command", "arguments": {"command": SED_WRONG, "description": "round half up"}},
}


@pytest.fixture(scope="module")
def task():
    return load(ROOT / "tasks" / TASK)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)


def _run_dying(agent: str, death: str, task, tmp_path, sandbox: str = "local"):
    model = {**AGENTS, **PRESETS}[agent][0]
    steps = [usage(ACT[agent], 3200, 50, 2000), {"outage": "dead" if death == "killed" else 503}]

    def run(base: str):
        cfg = compose(f"agent={agent}", f"model={model}", f"model.api_base={api_base_for(model, base)}",
                      "delivery=squashed", f"sandbox={sandbox}", "agent.dead_model_s=0", "limits.max_wall_s=600",
                      *PRESET_OVERRIDES.get(agent, ()))
        if sandbox == "docker":
            cfg["sandbox"]["image"] = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")
        return episode(task, cfg, tmp_path)

    if death == "killed":  # a real process that exits: its port refuses every later connection
        script = tmp_path / "script.json"
        script.write_text(json.dumps(steps))
        with testmodel.subprocess_server(script) as base:
            return run(base)
    with testmodel.in_thread(testmodel.parse_script(steps)) as srv:
        return run(testmodel.base_url(srv))


def _check_error(agent: str, rec, events):
    assert rec["stop_reason"] == "error", (agent, rec["stop_reason"], rec["error"])
    assert "failed every call since some point" in rec["error"], rec["error"]
    assert is_error(EpisodeRecord.from_flat(rec)) and outcome_label(EpisodeRecord.from_flat(rec)) == "error (no outcome)"
    assert [a["stop_reason"] for a in rec["attempts"]] == ["error"] and rec["resolved"] is False
    assert rec["attempts"][0]["resolved"] is (agent == "mini-swe-agent")  # graded, yet no outcome
    assert rec["turns"] == rec["model_calls"] == 1  # the answered call; the failed ones are no turns
    failed = [e for e in events if e["kind"] == "model_error"]
    assert failed and rec["cost_usd"] == pytest.approx((1200 * 3.0 + 2000 * 0.3 + 50 * 15.0) / 1e6, rel=1e-12)
    assert [e["alive"] for e in events if e["kind"] == "model_probe"][-1] is False
    # the CLI gave up at the gateway's refusal instead of retrying it with backoff (Claude Code sends 2
    # calls, Codex reconnects twice; OpenCode once retried 5 times over ~70 s when the refusal's text
    # read like a transient error)
    assert len([e for e in events if e["kind"] == "model_refused"]) <= 3, agent
    line = outcome(EpisodeRecord.from_flat(rec))
    assert line.startswith("error (no outcome)") and "unresolved" not in line
    assert "unresolved (error)" not in json.dumps(events)


# one death per CLI, the two kinds alternating (what a CLI sees of either is one failed call, a 502
# or a 503, then the gateway's refusals; both kinds are each checked behind the built-in agent too)
DEATHS = [(agent, "503 forever" if i % 2 == 0 else "killed") for i, agent in enumerate([*AGENTS, *PRESETS])]


@pytest.mark.bwrap
@pytest.mark.parametrize(("agent", "death"), DEATHS)
def test_a_model_that_dies_mid_episode_is_an_error(agent, death, task, tmp_path, key):
    rec, events = _run_dying(agent, death, task, tmp_path)
    _check_error(agent, rec, events)


@pytest.mark.docker
def test_a_model_that_dies_mid_episode_is_an_error_in_docker(task, tmp_path, key, docker_image):
    rec, events = _run_dying("claude-code", "killed", task, tmp_path, sandbox="docker")
    _check_error("claude-code", rec, events)
