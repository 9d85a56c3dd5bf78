"""Declared capabilities: what an agent asks of the episode is read from `capabilities`, never probed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sdebench.agents.base import Agent, Capabilities, CapabilityError, SandboxAgent, capabilities_of
from sdebench.components import AGENTS, resolve

ROOT = Path(__file__).resolve().parents[2]
# What an agent (or what it is given: its model client, its toolbox) once offered by being probed for.
CAPABILITY_NAMES = {"needs_answer_key", "uses_model", "runs_in_sandbox", "address_space_mb", "sandbox_mounts",
                    "worst_case_usd", "logs_calls", "close", "capabilities"}
AGENTISH = ("agent", "client", "toolbox")


def probes(source: str) -> list[str]:
    """Every getattr/hasattr call of `source` that reads an agent's (or its client's or toolbox's) attribute."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):
            continue
        target, attr = ast.unparse(node.args[0]), node.args[1]
        named = isinstance(attr, ast.Constant) and attr.value in CAPABILITY_NAMES
        if named or any(a in target.lower() for a in AGENTISH) or target == "cls":
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_probe_finder_sees_what_the_loop_once_did():
    old = ('mounts = agent_obj.sandbox_mounts(w) if hasattr(agent_obj, "sandbox_mounts") else ()\n'
           'key = getattr(agent_obj, "needs_answer_key", False)\n'
           'logs = getattr(ctx.toolbox, "logs_calls", False)\n'
           'ok = getattr(rec, "wall_s")\n')
    assert len(probes(old)) == 3


@pytest.mark.parametrize("package", ["sdebench/runs", "sdebench/agents"])
def test_no_agent_is_probed_by_getattr_or_hasattr(package):
    found = {str(p.relative_to(ROOT)): probes(p.read_text()) for p in sorted((ROOT / package).rglob("*.py"))}
    assert {p: f for p, f in found.items() if f} == {}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_registered_agent_declares_its_capabilities(name):
    cls = resolve("agent", name)
    caps = capabilities_of(cls)
    assert isinstance(caps, Capabilities)
    assert callable(cls.close) and callable(cls.start) and callable(cls.run) and callable(cls.feedback)
    if caps.runs_in_sandbox:
        assert callable(cls.sandbox_mounts)


def test_who_asks_for_what():
    caps = {n: capabilities_of(resolve("agent", n)) for n in AGENTS}
    assert {n for n, c in caps.items() if c.needs_answer_key} == {"oracle", "conventional", "learner"}
    installed = {n for n, t in AGENTS.items() if ".installed." in t}
    assert {n for n, c in caps.items() if c.uses_model} == installed | {"llm"}
    assert {n for n, c in caps.items() if c.runs_in_sandbox} == installed
    assert {n: c.address_space_mb for n, c in caps.items() if c.address_space_mb} == {"opencode": 256 * 1024}


def test_an_agent_without_capabilities_is_one_line():
    class Bare:
        pass

    with pytest.raises(CapabilityError, match="agent Bare declares no capabilities") as e:
        capabilities_of(Bare())
    assert "\n" not in str(e.value)
    Bare.capabilities = {"uses_model": True}  # not a Capabilities
    with pytest.raises(CapabilityError):
        capabilities_of(Bare)


def test_the_protocols_check_an_agent_object():
    from sdebench.agents.reference import OracleAgent

    agent = OracleAgent()
    assert isinstance(agent, Agent) and not isinstance(agent, SandboxAgent)
