"""What each installed CLI sees, read from the first request it sends (the test model records every
request body): under memtool the memory tool is in its tool list directly (no deferred-tool search
in front of it); its own built-in memory is off; a CLI without an MCP client is told of the
`memory_search` command, which returns what the tool returns, is logged and counted like it, and
names nothing of the task or the host. The record's `tool_calls` counts every tool a CLI called."""

from __future__ import annotations

import json
import re

import pytest

from sdebench.tasks.record import load
from sdebench.testing import testmodel
from tests.agents.installed.conftest import TEST_IMAGE
from tests.agents.installed.helpers import (
    KEY_ENV,
    PLANTED,
    ROOT,
    api_base_for,
    compose,
    episode,
    requests,
    usage,
)
from tests.agents.installed.test_episodes import AGENTS, MEMORY_QUERY, PRESET_OVERRIDES, PRESETS, TASK

pytestmark = [pytest.mark.slow, pytest.mark.agents, pytest.mark.bwrap]

# the memory tool as each CLI with an MCP client lists it to its model
MEMORY_TOOL = {"claude-code": "mcp__memory__memory_search", "codex": "mcp__memory__memory_search",
               "qwen-code": "mcp__memory__memory_search", "opencode": "memory_memory_search",
               "gemini-cli": "mcp_memory_memory_search"}
# how each CLI would defer the memory tool behind a search of its own (seen with its defaults)
DEFERRED = {
    "claude-code": "ToolSearch",  # a tool that loads the deferred ones
    "codex": "Deferred tool namespaces",  # the MCP server named, its tools behind a hosted tool_search
    "qwen-code": "MCP tools became available after startup and are reachable through `tool_search`",
}
# what a CLI's own memory puts into its prompt when it is on (checked absent; each seen present with it on)
OWN_MEMORY = {
    "claude-code": ("persistent file-based memory", "MEMORY.md"),  # its auto memory section
    "codex": ("memory_summary", "Consolidate"),  # its memories: a consolidation call of their own
    "qwen-code": ("How to save memories", "MEMORY.md"),  # its managed auto-memory
    "opencode": ("MEMORY.md",),
    # memory files loaded (global, private project, any file), its auto memory's inbox
    "gemini-cli": ("<global_context>", "<user_project_memory>", "--- Context from:", "memory inbox"),
    "mini-swe-agent": ("MEMORY.md",),
    "aider": ("MEMORY.md",),
}
# model names: codex defers MCP tools for every model it knows, so it is asked for one of those
MODEL_NAME = {"codex": ("model.name=gpt-5.5",)}
COMMAND_NOTE = "The shell has a `memory_search` command (`memory_search [-k N] QUERY`). Search the project's memory"


@pytest.fixture(scope="module")
def task():
    return load(ROOT / "tasks" / TASK)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)


def tool_names(body: dict) -> list[str]:
    """The tools a request body offers, in any protocol the test model records."""
    names = []
    for t in body.get("tools") or []:
        for d in t.get("function_declarations") or t.get("functionDeclarations") or []:
            names.append(d["name"])
        if "function" in t:
            names.append(t["function"]["name"])
        elif "name" in t:
            names.append(t["name"])
    return names


def _episode(agent: str, delivery: str, steps: list[dict], server, task, tmp_path, sandbox: str = "local"):
    model = {**AGENTS, **PRESETS}[agent][0]
    server.model.reset(testmodel.parse_script(steps))
    base = testmodel.base_url(server)
    cfg = compose(f"agent={agent}", f"model={model}", f"model.api_base={api_base_for(model, base)}",
                  f"delivery={delivery}", f"sandbox={sandbox}", "max_interventions=0", *PRESET_OVERRIDES.get(agent, ()),
                  *MODEL_NAME.get(agent, ()))
    if sandbox == "docker":
        cfg["sandbox"]["image"] = TEST_IMAGE
    rec, events = episode(task, cfg, tmp_path)
    return rec, events, requests(base)


def _finish(agent: str) -> dict:
    if agent == "mini-swe-agent":
        return usage({"tool": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}, 100, 10)
    return usage({"text": "done"}, 100, 10)


@pytest.mark.parametrize("agent", [*AGENTS, *PRESETS])
def test_the_first_request_under_memtool(agent, task, server, tmp_path, key):
    """The memory tool listed directly (CLIs with an MCP client) or the command named in the prompt
    (without one); no tool-search in front of tools; none of the CLI's own memory."""
    rec, events, reqs = _episode(agent, "memtool", [_finish(agent)], server, task, tmp_path)
    assert rec["error"] is None and rec["model_calls"] == 1, rec
    first = reqs[0]["body"]
    names = tool_names(first)
    text = json.dumps(first)
    if agent in MEMORY_TOOL:
        assert MEMORY_TOOL[agent] in names, (agent, names)
        assert COMMAND_NOTE not in text  # the command exists for it too, but its prompt stays as shipped
    else:
        assert COMMAND_NOTE in text, agent
    if agent in DEFERRED:
        assert DEFERRED[agent] not in text and DEFERRED[agent] not in names, agent
    found = [m for m in OWN_MEMORY[agent] if m in text]
    assert found == [], (agent, found)
    if agent == "gemini-cli":
        # its prompt still describes memory files it may keep; they are all in the episode's fresh HOME
        paths = re.findall(r"(\.?/[\w./-]*(?:MEMORY|GEMINI)\.md)", text)
        assert paths and all(p.startswith("/tmp/agent/home/") or p.startswith("./") for p in paths), paths
    if agent == "codex":  # no call of its memories, before or after
        assert all("memory_summary" not in json.dumps(r["body"]) for r in reqs)


@pytest.mark.parametrize("agent", ["claude-code", "mini-swe-agent"])
def test_no_memory_and_no_command_outside_memtool(agent, task, server, tmp_path, key):
    shell = "Bash" if agent == "claude-code" else "bash"
    probe = {"tool": shell, "arguments": {"command": "command -v memory_search || echo NO-COMMAND; echo PATH=$PATH"}}
    rec, events, reqs = _episode(agent, "squashed", [usage(probe, 100, 10), _finish(agent)], server, task, tmp_path)
    assert rec["error"] is None, rec
    first = json.dumps(reqs[0]["body"])
    assert COMMAND_NOTE not in first and not any("memory" in n for n in tool_names(reqs[0]["body"]))
    out = json.dumps(reqs[1]["body"]["messages"][-1] if "messages" in reqs[1]["body"] else reqs[1]["body"])
    assert "NO-COMMAND" in out and "/tmp/agent/gateway/bin" not in out


def test_the_memory_command_returns_what_the_tool_returns_and_names_nothing(task, server, tmp_path, key):
    """Claude Code calls the MCP tool, then runs the command with the same query from its shell, and
    looks around the command's files: the same hits, both logged and counted as `memory_search`,
    nothing naming the task, the condition or a host path."""
    look = ("memory_search rounding policy invoices; echo ===; cat /tmp/agent/gateway/memory_search.json; echo; "
            "ls -la /tmp/agent/gateway /tmp/agent/gateway/bin; memory_search --help")
    steps = [usage({"tool": "mcp__memory__memory_search", "arguments": MEMORY_QUERY}, 3000, 40, 1000),
             usage({"tool": "Bash", "arguments": {"command": look, "description": "search"}}, 3100, 40, 1000),
             usage({"text": "done"}, 3200, 5, 1000)]
    rec, events, reqs = _episode("claude-code", "memtool", steps, server, task, tmp_path)
    assert rec["error"] is None and rec["model_calls"] == 3, rec

    def last_result(req) -> str:
        content = req["body"]["messages"][-1]["content"]
        return "".join(b.get("content") if isinstance(b.get("content"), str) else json.dumps(b.get("content"))
                       for b in content if isinstance(b, dict) and b.get("type") == "tool_result")

    tool_out, shell_out = last_result(reqs[1]), last_result(reqs[2])
    try:  # Claude Code shows the MCP tool's structured result
        hits = json.loads(tool_out)["result"].strip()
    except (ValueError, KeyError, TypeError):
        hits = tool_out.strip()
    assert "[K]" in hits and hits in shell_out.split("===")[0], (hits[:300], shell_out[:600])
    mem = [e for e in events if e["kind"] == "tool" and e["name"] == "memory_search"]
    assert len(mem) == 2 and mem[0]["output"] == mem[1]["output"]
    assert [e["kind"] for e in events if e["kind"] in ("mcp_call", "command_call")] == ["mcp_call", "command_call"]
    assert rec["tool_calls"] == {"memory_search": 2, "Bash": 1}
    assert len(rec["retrieval"]["searches"]) == 2  # the retrieval diagnostics saw both
    for secret in (task.id, task.family, f"-{task.source}", str(tmp_path), "memtool", "sdebench-agents", "/work"):
        assert secret not in shell_out, secret
    assert "[REDACTED]" in json.dumps(events) or "sdb-" not in json.dumps(events)


@pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_mini_swe_agent_searches_memory_with_the_command(sandbox, task, server, tmp_path, key, request):
    if sandbox == "docker":
        request.getfixturevalue("docker_image")
    search = usage({"tool": "bash", "arguments": {"command": "memory_search rounding policy invoices"}}, 3000, 40)
    rec, events, reqs = _episode("mini-swe-agent", "memtool", [search, _finish("mini-swe-agent")], server, task, tmp_path,
                                 sandbox)
    assert rec["error"] is None and rec["model_calls"] == 2, rec
    assert "[K]" in json.dumps(reqs[1]["body"]["messages"][-1])  # the hits reached the model
    assert rec["tool_calls"] == {"bash": 2, "memory_search": 1}
    assert [e["kind"] for e in events if e["kind"] == "command_call"] == ["command_call"]


def test_aider_searches_memory_with_the_command(task, server, tmp_path, key):
    """aider runs no suggested shell command under --yes-always; its driver runs a block of
    `memory_search` lines and reflects the output to the model (nothing else rides along)."""
    ask = usage({"text": "Let me check the project's memory first.\n\n```bash\nmemory_search rounding policy invoices\n"
                         "```\n"}, 3000, 40)
    sneak = usage({"text": "```bash\nmemory_search x; touch /repo/SNEAKED\n```\n"}, 3100, 20)
    rec, events, reqs = _episode("aider", "memtool", [ask, sneak, usage({"text": "done"}, 3200, 5)], server, task, tmp_path)
    assert rec["error"] is None and rec["model_calls"] == 3, rec
    assert "[K]" in json.dumps(reqs[1]["body"]["messages"][-1])  # reflected to the model in the same run
    assert rec["tool_calls"] == {"memory_search": 2}
    assert "SNEAKED" not in rec["final_diff"]  # `;` was a query word: no shell ran it
