"""One way to build a component by name or `module:Class`: agents, deliveries, memory systems, sandboxes, graders.

Each kind has a registry of built-in names, each pointing at a `module:attr` target that is
imported only when used (a reference run never imports litellm or the docker SDK). A value that
is not a registered name but reads `package.module:Name` is imported as it is, so a user's own
class is selected from config without touching this file:

    agent.name=mypkg.agents:MyAgent   delivery.name=mypkg.memory:Digest   sandbox.backend=mypkg.box:Box

How each kind is built from its config section:

- agent (`agent.name`): `cls.from_config({"agent": ..., "model": ...})`, its own section and the
  model's, nothing else of the run config (which names the source, the selected task ids and the
  task store); `cls()` if it has no `from_config`.
- delivery (`delivery.name`): `cls(**options)`, the section's other keys as options; a mode with a
  `memory` field (memtool) also gets the memory system the `memory` section selects.
- memory (`memory.name`): `cls(**options)` (sdebench.delivery.backend.MemoryBackend), one per episode.
- sandbox (`sandbox.backend`): `target(**options)`; `target.from_config(options)` if it has one.
- grader (the task's `grader` field): a callable `grader(task, workspace, factory, **options)
  -> Grade`; a class is instantiated once with no arguments and then called so. The episode
  passes one keyword, `options`, a `sdebench.grading.options.GradeOptions`; the built-in graders
  also take its fields as keywords (`GradeOptions.given`).

An unknown name, a malformed `module:Class`, a module that does not import or lacks the name, and
options the component rejects are each one line naming what is wrong (ComponentError; for
sandboxes SandboxError, which the sandbox callers already handle).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from sdebench.errors import ConfigError
from sdebench.tasks.graders import DEFAULT_GRADER, GRADERS, is_target

AGENTS: dict[str, str] = {
    "noop": "sdebench.agents.reference:NoopAgent",
    "oracle": "sdebench.agents.reference:OracleAgent",
    "conventional": "sdebench.agents.reference:ConventionalAgent",
    "patch": "sdebench.agents.reference:PatchAgent",
    "prober": "sdebench.agents.prober:ProberAgent",
    "reader-top1": "sdebench.agents.readers:TopOneReader",
    "reader-latest": "sdebench.agents.readers:LatestReader",
    "reader-majority": "sdebench.agents.readers:MajorityReader",
    "searcher": "sdebench.agents.searcher:Searcher",
    "learner": "sdebench.agents.learner:LearnerAgent",
    "llm": "sdebench.agents.llm:LLMAgent",
    "claude-code": "sdebench.agents.installed.claude_code:ClaudeCodeAgent",
    "codex": "sdebench.agents.installed.codex:CodexAgent",
    "mini-swe-agent": "sdebench.agents.installed.mini_swe_agent:MiniSweAgent",
    "qwen-code": "sdebench.agents.installed.qwen_code:QwenCodeAgent",
    "opencode": "sdebench.agents.installed.opencode:OpenCodeAgent",
    "aider": "sdebench.agents.installed.aider:AiderAgent",
    "gemini-cli": "sdebench.agents.installed.gemini_cli:GeminiCliAgent",
}
DELIVERIES: dict[str, str] = {
    "full": "sdebench.delivery.modes:Full",
    "squashed": "sdebench.delivery.modes:Squashed",
    "memtool": "sdebench.delivery.modes:Memtool",
    "inject": "sdebench.delivery.modes:Inject",
    "oracle": "sdebench.delivery.modes:Oracle",
}
MEMORIES: dict[str, str] = {
    "bm25": "sdebench.delivery.bm25:Bm25Memory",  # built in: BM25 is part of the delivery stage
    "kg": "sdebench.memory.kg:KnowledgeGraphMemory",
    "basic-memory": "sdebench.memory.basic_memory:BasicMemory",
    "mem0": "sdebench.memory.mem0:Mem0Memory",
}
SANDBOXES: dict[str, str] = {
    "local": "sdebench.sandbox:local_factory",
    "docker": "sdebench.sandbox:docker_factory",
    "unsafe_local": "sdebench.sandbox:unsafe_local_factory",
}
REGISTRIES: dict[str, dict[str, str]] = {"agent": AGENTS, "delivery": DELIVERIES, "memory": MEMORIES, "sandbox": SANDBOXES,
                                         "grader": GRADERS}
# How each kind is named in messages ("unknown sandbox backend 'x'").
_NOUN = {"agent": "agent", "delivery": "delivery", "memory": "memory system", "sandbox": "sandbox backend", "grader": "grader"}


class ComponentError(ConfigError):
    """A component that cannot be found or built; the message is one line."""


def _error(kind: str, message: str) -> Exception:
    if kind == "sandbox":
        from sdebench.errors import SandboxError

        return SandboxError(message)
    return ComponentError(message)


def choices(kind: str) -> str:
    """The registered names of `kind`, for messages."""
    return ", ".join(REGISTRIES[kind])


def resolve(kind: str, name: Any) -> Any:
    """The class or function `name` selects for `kind`: a registered name, else a `module:Name` reference."""
    registry = REGISTRIES[kind]
    noun = _NOUN[kind]
    if isinstance(name, str) and name in registry:
        target = registry[name]
    elif isinstance(name, str) and ":" in name:
        if not is_target(name):
            raise _error(kind, f"bad {noun} reference {name!r}: write package.module:Name")
        target = name
    else:
        raise _error(kind, f"unknown {noun} {name!r} (choose {choices(kind)}, or give package.module:Name)")
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise _error(kind, f"{noun} {name!r}: cannot import {module}: {e}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise _error(kind, f"{noun} {name!r}: {module} has no attribute {attr!r}") from None
    return obj


def build_agent(agent: Mapping[str, Any] | None, model: Mapping[str, Any] | None = None) -> Any:
    """The agent `agent['name']` selects, built from its own section and the model's (the run config's `agent`, `model`)."""
    name = dict(agent or {}).get("name")
    cls = resolve("agent", name)
    if not hasattr(cls, "from_config"):
        return cls()
    sections = {"agent": dict(agent or {}), **({"model": dict(model)} if model is not None else {})}
    return cls.from_config(sections)


def build_memory(section: Mapping[str, Any] | None) -> Any:
    """The memory system `section['name']` selects (default `bm25`), with the section's other keys as options."""
    opts = dict(section or {})
    name = opts.pop("name", None) or "bm25"
    cls = resolve("memory", name)
    try:
        return cls(**opts)
    except TypeError as e:
        raise ComponentError(f"bad options for memory system {name!r}: {e}") from None


def takes_memory(cls: Any) -> bool:
    """Whether a delivery class serves a memory system (a dataclass field named `memory`)."""
    return "memory" in getattr(cls, "__dataclass_fields__", {})


def memory_system_of(delivery: Mapping[str, Any] | None, memory: Mapping[str, Any] | None) -> str | None:
    """The memory system an episode uses: `memory['name']` (default bm25) when the `delivery` section's mode
    serves one (memtool), else None. One rule for the record's identity and the config hash."""
    try:
        serves = takes_memory(resolve("delivery", dict(delivery or {}).get("name")))
    except ConfigError:  # a bad delivery is reported where it is built, not here
        return None
    return str(dict(memory or {}).get("name") or "bm25") if serves else None


def build_delivery(section: Mapping[str, Any] | None, memory: Mapping[str, Any] | None = None) -> Any:
    """The delivery mode `section['name']` selects, with the section's other keys as options; a mode that
    serves a memory system (memtool) gets the one `memory` selects, built fresh (one per episode)."""
    opts = dict(section or {})
    name = opts.pop("name", None)
    cls = resolve("delivery", name)
    if takes_memory(cls):
        section = dict(memory or {"name": "bm25"})
        if section.get("name", "bm25") == "bm25" and "default_k" in opts:
            section["default_k"] = opts["default_k"]  # BM25's hits per search: memtool's option, as before the group
        opts["memory"] = build_memory(section)
    try:
        return cls(**opts)
    except TypeError as e:
        raise ComponentError(f"bad options for delivery {name!r}: {e}") from None


def build_sandbox(section: Mapping[str, Any] | None) -> Any:
    """The sandbox factory `section['backend']` selects (default `local`), with the other keys as options."""
    opts = dict(section or {})
    backend = opts.pop("backend", "local")
    target = resolve("sandbox", backend)
    try:
        return target.from_config(opts) if hasattr(target, "from_config") else target(**opts)
    except TypeError as e:
        raise _error("sandbox", f"bad options for sandbox backend {backend!r}: {e}") from None


def grader(name: str | None) -> Any:
    """The grading function `name` selects (None: the default grader)."""
    target = resolve("grader", name or DEFAULT_GRADER)
    return target() if isinstance(target, type) else target


def grader_for(task: Any) -> Any:
    """The grading function of `task`, as its `grader` field names it."""
    return grader(getattr(task, "grader", None))
