"""Agents: the protocol (base.py), scripted reference agents, and the LLM agent (imported lazily)."""

from __future__ import annotations

import importlib
from typing import Any

from sdebench.agents.base import Agent

# name -> "module:Class"; classes are imported on use so reference runs never load litellm.
REGISTRY: dict[str, str] = {
    "noop": "sdebench.agents.reference:NoopAgent",
    "oracle": "sdebench.agents.reference:OracleAgent",
    "conventional": "sdebench.agents.reference:ConventionalAgent",
    "patch": "sdebench.agents.reference:PatchAgent",
    "prober": "sdebench.agents.prober:ProberAgent",
    "learner": "sdebench.agents.learner:LearnerAgent",
    "llm": "sdebench.agents.llm:LLMAgent",
}


class AgentConfigError(ValueError):
    """An unknown agent name or a bad agent option."""


def agent_class(name: str) -> type:
    """The class registered under `name`."""
    if name not in REGISTRY:
        raise AgentConfigError(f"unknown agent {name!r} (choose {', '.join(REGISTRY)})")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_agent(cfg: dict[str, Any]) -> Agent:
    """The agent named by `cfg['agent']['name']`; `cfg` is the whole resolved run config."""
    name = (cfg.get("agent") or {}).get("name")
    return agent_class(name).from_config(cfg)
