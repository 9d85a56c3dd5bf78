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
    "learner": "sdebench.agents.learner:LearnerAgent",
    "llm": "sdebench.agents.llm:LLMAgent",
    "claude-code": "sdebench.agents.installed.claude_code:ClaudeCodeAgent",
    "codex": "sdebench.agents.installed.codex:CodexAgent",
    "mini-swe-agent": "sdebench.agents.installed.mini_swe_agent:MiniSweAgent",
}


class AgentConfigError(ValueError):
    """An unknown agent name or a bad agent option."""


def agent_class(name: str) -> type:
    """The class registered under `name`, or the class a `module:Class` name points at."""
    if name in REGISTRY:
        target = REGISTRY[name]
    elif isinstance(name, str) and ":" in name:
        target = name
    else:
        raise AgentConfigError(f"unknown agent {name!r} (choose {', '.join(REGISTRY)}, or give module:Class)")
    module, _, cls = target.partition(":")
    try:
        found = getattr(importlib.import_module(module), cls)
    except ImportError as e:
        raise AgentConfigError(f"agent {name!r}: cannot import {module}: {e}") from None
    except AttributeError:
        raise AgentConfigError(f"agent {name!r}: {module} has no {cls}") from None
    if not callable(getattr(found, "from_config", None)):
        raise AgentConfigError(f"agent {name!r}: {target} has no from_config(cfg) classmethod")
    return found


def make_agent(cfg: dict[str, Any]) -> Agent:
    """The agent named by `cfg['agent']['name']`; `cfg` is the whole resolved run config."""
    name = (cfg.get("agent") or {}).get("name")
    return agent_class(name).from_config(cfg)
