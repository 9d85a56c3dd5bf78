"""Whole episodes of the real agent CLIs (Claude Code, Codex CLI, mini-swe-agent, and the presets
Qwen Code, OpenCode, aider and Gemini CLI), installed at their pinned versions, in the real sandbox, behind the real gateway, driven by the scripted test model
through their own edit and shell tools: a wrong fix, one intervention, then the right one.

The record's tokens and cost must equal the scripted usage exactly; under memtool the agent's MCP
call of `memory_search` must reach the toolbox (trajectory and `tool_calls`). The installs come from
npm / PyPI on first use (CI installs them once in `.ci/run`)."""

from __future__ import annotations

import os

import pytest

from sdebench.runs import rules
from sdebench.runs.record import EpisodeRecord
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from sdebench.testing import testmodel
from tests.agents.installed.helpers import (
    KEY_ENV,
    PLANTED,
    ROOT,
    api_base_for,
    compose,
    episode,
    requests,
    totals,
    usage,
)

pytestmark = [pytest.mark.slow, pytest.mark.agents]

TASK = "billing-rounding-v0-K"
SED_WRONG = "sed -i 's/ROUND_CEILING/ROUND_HALF_UP/g' invoicer/money.py"
# The task's fact: amounts round toward zero (ROUND_DOWN) to a multiple of 0.25.
SED_RIGHT = "sed -i 's/ROUND_HALF_UP/ROUND_DOWN/g; s/\"0.01\"/\"0.25\"/' invoicer/money.py"
PATCH_RIGHT = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: invoicer/money.py\n@@\n"
    "-from decimal import ROUND_HALF_UP, Decimal\n+from decimal import ROUND_DOWN, Decimal\n@@\n"
    "-INCREMENT = Decimal(\"0.01\")\n+INCREMENT = Decimal(\"0.25\")\n@@\n"
    "-    return (to_decimal(amount) / INCREMENT).quantize(Decimal(\"1\"), rounding=ROUND_HALF_UP) * INCREMENT\n"
    "+    return (to_decimal(amount) / INCREMENT).quantize(Decimal(\"1\"), rounding=ROUND_DOWN) * INCREMENT\n"
    "*** End Patch\nEOF"
)
MEMORY_QUERY = {"query": "rounding policy invoices"}


def claude_steps(memtool: bool) -> list[dict]:
    """Claude Code's own tools: the MCP memory tool, Bash for the wrong fix, Read + Edit for the right one."""
    steps = [usage({"tool": "mcp__memory__memory_search", "arguments": MEMORY_QUERY}, 3000, 40, 1000)] if memtool else []
    return steps + [
        usage({"tool": "Bash", "arguments": {"command": SED_WRONG, "description": "round half up"}}, 3200, 50, 2000),
        usage({"text": "Fixed: amounts now round half up."}, 3300, 5, 2000),
        usage({"tool": "Read", "arguments": {"file_path": "invoicer/money.py"}}, 4000, 20, 3000),
        usage({"tool": "Edit", "arguments": {"file_path": "invoicer/money.py", "old_string": "ROUND_HALF_UP",
                                             "new_string": "ROUND_DOWN", "replace_all": True}}, 4200, 60, 3000),
        usage({"tool": "Edit", "arguments": {"file_path": "invoicer/money.py", "old_string": 'Decimal("0.01")',
                                             "new_string": 'Decimal("0.25")'}}, 4250, 30, 3000),
        usage({"text": "Fixed again: toward zero, to quarters."}, 4300, 5, 3000),
    ]


def codex_steps(memtool: bool) -> list[dict]:
    """Codex's own tools: the MCP memory tool, exec_command for the wrong fix, apply_patch for the right one."""
    steps = [usage({"tool": "mcp__memory__memory_search", "arguments": MEMORY_QUERY}, 3000, 40, 1000)] if memtool else []
    return steps + [
        usage({"tool": "exec_command", "arguments": {"cmd": SED_WRONG}}, 3200, 50, 2000),
        usage({"text": "Fixed: amounts now round half up."}, 3300, 5, 2000),
        usage({"tool": "exec_command", "arguments": {"cmd": PATCH_RIGHT}}, 4200, 60, 3000),
        usage({"text": "Fixed again: toward zero, to quarters."}, 4300, 5, 3000),
    ]


def mini_steps(memtool: bool) -> list[dict]:
    """mini-swe-agent's one tool, bash, with its submit command."""
    submit = {"tool": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}
    return [
        usage({"tool": "bash", "arguments": {"command": SED_WRONG}}, 3200, 50, 2000),
        usage(submit, 3300, 5, 2000),
        usage({"tool": "bash", "arguments": {"command": SED_RIGHT}}, 4200, 60, 3000),
        usage(submit, 4300, 5, 3000),
    ]


def qwen_steps(memtool: bool) -> list[dict]:
    """Qwen Code's own tools: the MCP memory tool, read_file + run_shell_command for the wrong fix (it refuses
    to let a shell command edit a file the session has not read), read_file + edit for the right one."""
    money = "/repo/invoicer/money.py"
    read = {"tool": "read_file", "arguments": {"file_path": money}}
    steps = [usage({"tool": "mcp__memory__memory_search", "arguments": MEMORY_QUERY}, 3000, 40, 1000)] if memtool else []
    return steps + [
        usage(read, 3100, 20, 1000),
        usage({"tool": "run_shell_command", "arguments": {"command": SED_WRONG}}, 3200, 50, 2000),
        usage({"text": "Fixed: amounts now round half up."}, 3300, 5, 2000),
        usage(read, 4000, 20, 3000),
        usage({"tool": "edit", "arguments": {"file_path": money, "old_string": "ROUND_HALF_UP",
                                             "new_string": "ROUND_DOWN", "replace_all": True}}, 4200, 60, 3000),
        usage({"tool": "edit", "arguments": {"file_path": money, "old_string": 'Decimal("0.01")',
                                             "new_string": 'Decimal("0.25")'}}, 4250, 30, 3000),
        usage({"text": "Fixed again: toward zero, to quarters."}, 4300, 5, 3000),
    ]


def gemini_steps(memtool: bool) -> list[dict]:
    """Gemini CLI's own tools (over the Gemini API): the MCP memory tool, run_shell_command for the wrong
    fix, read_file + replace for the right one."""
    money = "/repo/invoicer/money.py"
    steps = [usage({"tool": "mcp_memory_memory_search", "arguments": MEMORY_QUERY}, 3000, 40, 1000)] if memtool else []
    return steps + [
        usage({"tool": "run_shell_command", "arguments": {"command": SED_WRONG, "description": "round half up"}},
              3200, 50, 2000),
        usage({"text": "Fixed: amounts now round half up."}, 3300, 5, 2000),
        usage({"tool": "read_file", "arguments": {"file_path": money}}, 4000, 20, 3000),
        usage({"tool": "replace", "arguments": {"file_path": money, "instruction": "round toward zero",
                                                "old_string": "ROUND_HALF_UP", "new_string": "ROUND_DOWN",
                                                "allow_multiple": True}}, 4200, 60, 3000),
        usage({"tool": "replace", "arguments": {"file_path": money, "instruction": "quarters",
                                                "old_string": 'Decimal("0.01")', "new_string": 'Decimal("0.25")'}},
              4250, 30, 3000),
        usage({"text": "Fixed again: toward zero, to quarters."}, 4300, 5, 3000),
    ]


def opencode_steps(memtool: bool) -> list[dict]:
    """OpenCode's own tools: the MCP memory tool, bash for the wrong fix, read + edit for the right one."""
    money = "/repo/invoicer/money.py"
    steps = [usage({"tool": "memory_memory_search", "arguments": MEMORY_QUERY}, 3000, 40, 1000)] if memtool else []
    return steps + [
        usage({"tool": "bash", "arguments": {"command": SED_WRONG, "description": "round half up"}}, 3200, 50, 2000),
        usage({"text": "Fixed: amounts now round half up."}, 3300, 5, 2000),
        usage({"tool": "read", "arguments": {"filePath": money}}, 4000, 20, 3000),
        usage({"tool": "edit", "arguments": {"filePath": money, "oldString": "ROUND_HALF_UP",
                                             "newString": "ROUND_DOWN", "replaceAll": True}}, 4200, 60, 3000),
        usage({"tool": "edit", "arguments": {"filePath": money, "oldString": 'Decimal("0.01")',
                                             "newString": 'Decimal("0.25")'}}, 4250, 30, 3000),
        usage({"text": "Fixed again: toward zero, to quarters."}, 4300, 5, 3000),
    ]


def _search_replace(old: str, new: str, increment: str | None = None) -> str:
    """aider's SEARCH/REPLACE blocks changing invoicer/money.py's rounding mode (and its increment)."""
    def block(a: str, b: str) -> str:
        return f"invoicer/money.py\n```python\n<<<<<<< SEARCH\n{a}\n=======\n{b}\n>>>>>>> REPLACE\n```\n\n"

    line = '    return (to_decimal(amount) / INCREMENT).quantize(Decimal("1"), rounding={}) * INCREMENT'
    text = block(f"from decimal import {old}, Decimal", f"from decimal import {new}, Decimal")
    if increment is not None:
        text += block('INCREMENT = Decimal("0.01")', f'INCREMENT = Decimal("{increment}")')
    return text + block(line.format(old), line.format(new))


def aider_steps(memtool: bool) -> list[dict]:
    """aider's own flow and edit format (`--edit-format diff`): the model names the file it needs, aider
    adds it to the chat and asks again, the model answers with SEARCH/REPLACE blocks; once per attempt."""
    ask = {"text": "The rounding lives in invoicer/money.py; please add it to the chat."}
    return [
        usage(ask, 3000, 20, 1000),
        usage({"text": "Round half up.\n\n" + _search_replace("ROUND_CEILING", "ROUND_HALF_UP")}, 3200, 150, 2000),
        usage(ask, 4000, 20, 3000),
        usage({"text": "Toward zero, to quarters.\n\n" + _search_replace("ROUND_HALF_UP", "ROUND_DOWN", "0.25")},
              4200, 160, 3000),
    ]


# agent -> (model entry the gateway forwards to, scripted steps, whether it has an MCP client)
AGENTS = {
    "claude-code": ("testmodel-anthropic", claude_steps, True),
    "codex": ("testmodel", codex_steps, True),
    "mini-swe-agent": ("testmodel", mini_steps, False),
}
# the presets: one episode each (local sandbox), to keep CI short
PRESETS = {
    "qwen-code": ("testmodel", qwen_steps, True),
    "opencode": ("testmodel", opencode_steps, True),
    "aider": ("testmodel", aider_steps, False),
    "gemini-cli": ("testmodel-gemini", gemini_steps, True),
}
PRESET_OVERRIDES = {"aider": ("agent.args=[--edit-format,diff]",)}
# what the model saw of the first attempt when the feedback came (the history was kept)
FIRST_ATTEMPT = {"aider": ">>>>>>> REPLACE"}


@pytest.fixture(scope="module")
def task():
    return load(ROOT / "tasks" / TASK)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)


def _run(agent: str, task, server, tmp_path, delivery: str, sandbox: str, *overrides: str):
    model, make_steps, mcp = {**AGENTS, **PRESETS}[agent]
    steps = make_steps(delivery == "memtool" and mcp)
    server.model.reset(testmodel.parse_script(steps))
    base = testmodel.base_url(server)
    api_base = api_base_for(model, base)
    cfg = compose(f"agent={agent}", f"model={model}", f"model.api_base={api_base}", f"delivery={delivery}",
                  f"sandbox={sandbox}", *PRESET_OVERRIDES.get(agent, ()), *overrides)
    if sandbox == "docker":
        cfg["sandbox"]["image"] = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")
    rec, events = episode(task, cfg, tmp_path)
    return steps, rec, events


MEMORY_ALIASES = {"mcp__memory__memory_search", "mcp_memory_memory_search", "memory_memory_search"}


def called_tools(steps) -> dict[str, int]:
    """The tools scripted steps call, by name, each CLI's memory tool counted as `memory_search`."""
    out: dict[str, int] = {}
    for s in steps:
        names = [s["tool"]] if "tool" in s else [c["name"] for c in s.get("tool_calls", [])]
        for n in names:
            n = "memory_search" if n in MEMORY_ALIASES else n
            out[n] = out.get(n, 0) + 1
    return out


def _check(steps, rec, events, server, memtool: bool):
    assert rec["error"] is None, rec["error"]
    assert rec["resolved"] is True and rec["stop_reason"] == "resolved", rec
    assert rec["interventions"] == 1 and [a["resolved"] for a in rec["attempts"]] == [False, True]
    assert "ROUND_DOWN" in rec["final_diff"] and 'Decimal("0.25")' in rec["final_diff"]
    # every scripted step was served, and the record's usage is exactly the scripted usage
    assert len(requests(testmodel.base_url(server))) == len(steps)
    p, c, k, usd = totals(steps)
    assert (rec["model_calls"], rec["prompt_tokens"], rec["completion_tokens"], rec["cached_tokens"]) == (len(steps), p, c, k)
    assert rec["cost_usd"] == pytest.approx(usd, rel=1e-12)
    calls = [e for e in events if e["kind"] == "model_call"]
    assert len(calls) == len(steps) and sum(e["cost_usd"] for e in calls) == pytest.approx(usd, rel=1e-12)
    # the feedback reached the agent in the same session: the request after it carries the earlier turns
    fed = [e for e in events if e["kind"] == "feedback"]
    assert len(fed) == 1
    assert rec["tool_calls"] == called_tools(steps)  # every tool the CLI called, by name
    if memtool:
        assert rec["tool_calls"].get("memory_search") == 1
        mem = [e for e in events if e["kind"] == "tool" and e["name"] == "memory_search"]
        assert len(mem) == 1 and "[K]" in mem[0]["output"]  # the fact's source is among the hits
        assert [e["name"] for e in events if e["kind"] == "mcp_call"] == ["memory_search"]
    # neither the model key nor the episode token was written anywhere
    text = "\n".join(str(e) for e in events)
    assert PLANTED not in text and "sdb-" not in text.replace("sdb-[REDACTED]", "")


@pytest.mark.bwrap
@pytest.mark.parametrize("agent", [*AGENTS, *PRESETS])
def test_an_installed_agent_fixes_after_one_intervention_under_memtool(agent, task, server, tmp_path, key):
    steps, rec, events = _run(agent, task, server, tmp_path, "memtool", "local")
    _check(steps, rec, events, server, memtool={**AGENTS, **PRESETS}[agent][2])
    reqs = requests(testmodel.base_url(server))
    # the statement reached the model, the resume kept the history and added the grader's output
    first = str(reqs[0]["body"])
    assert task.statement.strip()[:40] in first
    after_feedback = next(str(r["body"]) for r in reqs if "Held-out tests fail" in str(r["body"]))
    assert FIRST_ATTEMPT.get(agent, SED_WRONG.split("'")[1]) in after_feedback


@pytest.mark.docker
@pytest.mark.parametrize("agent", [*AGENTS, *PRESETS])
def test_an_installed_agent_runs_in_docker(agent, task, server, tmp_path, key, docker_image):
    steps, rec, events = _run(agent, task, server, tmp_path, "memtool", "docker")
    _check(steps, rec, events, server, memtool={**AGENTS, **PRESETS}[agent][2])


@pytest.mark.bwrap
@pytest.mark.parametrize("delivery", ["full", "squashed", "inject", "oracle"])
def test_claude_code_under_every_other_delivery(delivery, task, server, tmp_path, key):
    steps, rec, events = _run("claude-code", task, server, tmp_path, delivery, "local")
    _check(steps, rec, events, server, memtool=False)
    first = str(requests(testmodel.base_url(server))[0]["body"])
    if delivery == "oracle":
        assert task.fact[:30] in first  # the fact reached the agent in its task prompt
    elif delivery == "inject":
        assert "[K]" in first or "[H]" in first  # the memory corpus did
    else:
        assert task.fact[:30] not in first


PROBE = (
    "python3 -c \"import socket, sys\n"
    "routes = open('/proc/net/route').read().splitlines()[1:]\n"
    "print('routes', len(routes))\n"
    "for port in sys.argv[1:]:\n"
    "    s = socket.socket()\n"
    "    s.settimeout(3)\n"
    "    try:\n"
    "        s.connect(('127.0.0.1', int(port)))\n"
    "        print('REACHED', port)\n"
    "    except OSError as e:\n"
    "        print('BLOCKED', port, e.errno)\n"
    "\" {ports}"
)


@pytest.mark.parametrize("sandbox", ["local", "docker"])
def test_the_agent_shell_reaches_the_gateway_and_nothing_else(sandbox, task, server, tmp_path, key, request):
    """From Claude Code's own Bash tool: no route but loopback; the model server the gateway uses
    (listening on the host's 127.0.0.1) is unreachable; the gateway's relay port answers."""
    if sandbox == "docker":
        request.getfixturevalue("docker_image")
    port = server.server_address[1]
    probe = PROBE.format(ports=f"{port} 8377")
    steps = [usage({"tool": "Bash", "arguments": {"command": probe, "description": "probe"}}, 100, 10),
             usage({"text": "done"}, 100, 10)]
    server.model.reset(testmodel.parse_script(steps))
    cfg = compose("agent=claude-code", "model=testmodel-anthropic",
                  f"model.api_base={api_base_for('testmodel-anthropic', testmodel.base_url(server))}", "delivery=squashed",
                  f"sandbox={sandbox}", "max_interventions=0")
    if sandbox == "docker":
        cfg["sandbox"]["image"] = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")
    rec, events = episode(task, cfg, tmp_path)
    assert rec["error"] is None and rec["model_calls"] == 2, rec
    result = str(requests(testmodel.base_url(server))[1]["body"]["messages"][-1])
    assert "routes 0" in result, result  # no route anywhere: only the loopback of the sandbox's own namespace
    assert f"BLOCKED {port}" in result and f"REACHED {port}" not in result, result
    assert "REACHED 8377" in result, result  # the relay to the gateway


@pytest.mark.bwrap
@pytest.mark.parametrize("agent", [*AGENTS, *PRESETS])
def test_a_failing_model_ends_the_episode_as_an_error_not_an_outcome(agent, task, server, tmp_path, key):
    """Every call answered 400 by the model: the CLI's failure is the episode's recorded error (stop_reason
    `error`, which the analysis keeps out of outcomes), with the upstream's message, never a submit."""
    model = {**AGENTS, **PRESETS}[agent][0]
    server.model.reset(testmodel.parse_script([{"error": 400, "message": "context window exceeded", "repeat": True}]))
    base = testmodel.base_url(server)
    api_base = api_base_for(model, base)
    # mini-swe-agent retries a failed call 10 times with exponential backoff (~4 min); twice shows the same
    retries = ("+agent.env.MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=2",) if agent == "mini-swe-agent" else ()
    cfg = compose(f"agent={agent}", f"model={model}", f"model.api_base={api_base}", "delivery=squashed", "sandbox=local",
                  *PRESET_OVERRIDES.get(agent, ()), *retries)
    rec, events = episode(task, cfg, tmp_path)
    assert rec["stop_reason"] == "error" and rec["error"], rec
    assert "context window exceeded" in rec["error"], rec["error"]
    # what the workspace held is still graded once (as after any limit), and nothing was fed back
    assert [a["stop_reason"] for a in rec["attempts"]] == ["error"] and rec["interventions"] == 0
    assert rec["resolved"] is False and not [e for e in events if e["kind"] == "feedback"]
    assert rec["model_calls"] == 0 and rec["cost_usd"] == 0  # failed calls are unpaid
    assert requests(base)  # the calls did reach the model
    assert PLANTED not in rec["error"]


# whether the CLI loads the repo's AGENTS.md into its context by itself under `full` (docs/agents.md)
LOADS_AGENTS_MD = {"claude-code": True, "codex": True, "qwen-code": True, "opencode": True,
                   "mini-swe-agent": False, "aider": False, "gemini-cli": False}


@pytest.mark.bwrap
@pytest.mark.parametrize(("agent", "overrides"), [*((a, ()) for a in LOADS_AGENTS_MD),
                                                  ("gemini-cli", ("agent.context_files=[GEMINI.md,AGENTS.md]",))])
def test_which_clis_load_agents_md_under_full(agent, overrides, task, server, tmp_path, key):
    """What `full` gives each CLI without a tool call: the project files it loads by itself, as documented."""
    model = {**AGENTS, **PRESETS}[agent][0]
    finish = ({"tool": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}
              if agent == "mini-swe-agent" else {"text": "done"})
    server.model.reset(testmodel.parse_script([usage(finish, 100, 10)]))
    base = testmodel.base_url(server)
    api_base = api_base_for(model, base)
    cfg = compose(f"agent={agent}", f"model={model}", f"model.api_base={api_base}", "delivery=full", "sandbox=local",
                  "max_interventions=0", *PRESET_OVERRIDES.get(agent, ()), *overrides)
    rec, _ = episode(task, cfg, tmp_path)
    assert rec["error"] is None and rec["model_calls"] == 1, rec
    agents_md = repo_mod.read_tree(repo_mod.unbundle(task.bundle, tmp_path / "probe"))["AGENTS.md"]
    heading = agents_md.splitlines()[0].strip()
    assert heading.startswith("# ") and heading not in task.statement
    loaded = heading in str(requests(base)[0]["body"])
    assert loaded is (LOADS_AGENTS_MD[agent] or bool(overrides)), (agent, loaded)


@pytest.mark.bwrap
@pytest.mark.parametrize("how", ["kills its own CLI", "gets its request refused"])
def test_a_failure_the_agent_can_cause_is_an_unresolved_outcome_not_an_error(how, task, server, tmp_path, key):
    """After the model has acted, a run that fails with no infrastructure failure behind it (its tool call
    killed the CLI; the model refused a request it made) ends as `agent_error`: graded and counted
    unresolved, never "no outcome", so an agent cannot hide a miss by crashing."""
    act = usage({"tool": "run_shell_command", "arguments": {"command": SED_WRONG}}, 3200, 50, 2000)
    second = (usage({"tool": "run_shell_command", "arguments": {"command": "kill -9 $PPID"}}, 3300, 20, 2000)
              if how == "kills its own CLI" else {"error": 400, "message": "prompt is too long"})
    server.model.reset(testmodel.parse_script([act, second]))
    base = testmodel.base_url(server)
    cfg = compose("agent=gemini-cli", "model=testmodel-gemini", f"model.api_base={api_base_for('testmodel-gemini', base)}",
                  "delivery=squashed", "sandbox=local")
    rec, events = episode(task, cfg, tmp_path)
    assert rec["stop_reason"] == "agent_error" and rec["error"], rec
    assert ("exited with code" in rec["error"]) if how == "kills its own CLI" else ("prompt is too long" in rec["error"])
    assert rec["resolved"] is False and [a["stop_reason"] for a in rec["attempts"]] == ["agent_error"]
    typed = EpisodeRecord.from_flat(rec)
    assert not rules.is_error(typed) and rules.counted_interventions(typed) == rec["max_interventions"]
    assert rec["model_calls"] == (2 if how == "kills its own CLI" else 1)
    assert 'ROUND_HALF_UP' in rec["final_diff"]  # what it did before failing was graded


# from the agent's own shell: a model call of its own making, which the model answers 503, then its CLI killed
FAKE_DEATH = (
    "python3 -c \"import os, urllib.request as u\n"
    "r = u.Request('http://127.0.0.1:8377/v1/chat/completions', headers={'Content-Type': 'application/json', "
    "'Authorization': 'Bearer ' + os.environ['SDEBENCH_GATEWAY_TOKEN']}, "
    "data=b'{\\\"model\\\": \\\"x\\\", \\\"messages\\\": [{\\\"role\\\": \\\"user\\\", \\\"content\\\": \\\"hi\\\"}]}')\n"
    "try:\n    u.urlopen(r)\nexcept Exception as e:\n    print(e)\"; kill -9 $PPID"
)


@pytest.mark.bwrap
def test_an_agent_cannot_fake_a_dead_model(task, server, tmp_path, key):
    """The agent makes a call fail with a 5xx and kills its CLI at once: the failure looks like the
    model's, but the model answers the gateway's own probe, so the run is the agent's (`agent_error`)."""
    steps = [usage({"tool": "bash", "arguments": {"command": SED_WRONG}}, 3200, 50, 2000),
             usage({"tool": "bash", "arguments": {"command": FAKE_DEATH}}, 3300, 20, 2000),
             {"error": 503, "message": "overloaded"}]
    server.model.reset(testmodel.parse_script(steps))
    base = testmodel.base_url(server)
    cfg = compose("agent=mini-swe-agent", "model=testmodel", f"model.api_base={base}", "delivery=squashed",
                  "sandbox=local", "agent.dead_model_s=0")
    rec, events = episode(task, cfg, tmp_path)
    assert len(requests(base)) == 3 and "overloaded" in str([e for e in events if e["kind"] == "model_error"])
    assert rec["stop_reason"] == "agent_error" and not rules.is_error(EpisodeRecord.from_flat(rec)), (rec["stop_reason"], rec["error"])
    assert [e["alive"] for e in events if e["kind"] == "model_probe"] == [True]
    assert rec["model_calls"] == 2 and 'ROUND_HALF_UP' in rec["final_diff"]
