"""The seams between the episode loop, the agents and their tools.

An agent sees the task only as a bug report would show it: the statement, what the delivery adds
to the prompt, and its tools. Nothing it is given names the task (id, family, variant, source,
task-store path) or carries the answer key. Reference agents, which exist to check the benchmark,
declare it in their `Capabilities` and find the fact and both fixes in `ctx.answer_key`.

What an agent asks of the episode beyond `start/run/feedback/close` is declared once per class, in
its `capabilities` (a `Capabilities`); the episode and the pre-flight read nothing else of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from sdebench.errors import AgentError
from sdebench.sandbox.base import Mount, Sandbox


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returned to the agent."""

    name: str
    output: str
    error: bool = False  # the call was rejected (unknown tool, bad arguments, path outside the workspace)
    submitted: bool = False  # the call was `submit`
    duration_s: float = 0.0


@runtime_checkable
class Toolbox(Protocol):
    """The tools an agent may call in one episode (set by the delivery mode)."""

    logs_calls: bool  # every call (output included) is already written to the trajectory: the agent need not

    def names(self) -> list[str]:
        """Tool names available in this episode."""
        ...

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of the available tools."""
        ...

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; never raises (a bad call is an error result)."""
        ...


@dataclass
class Usage:
    """Model usage of one agent in one episode (reference agents leave it at zero)."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    model_s: float = 0.0
    format_errors: int = 0
    retries: int = 0


@dataclass(frozen=True)
class Limits:
    """Budgets of one episode, shared by all attempts."""

    max_turns: int = 50
    max_cost_usd: float = 2.0
    max_wall_s: float = 1800.0


@runtime_checkable
class EventLog(Protocol):
    """The agent's handle on the episode's trajectory: it logs events; `redact` lists values never to write."""

    redact: tuple[str, ...]

    def log(self, kind: str, **data: Any) -> None:
        """Record one event."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What an agent class asks of the episode, declared once (the class attribute `capabilities`)."""

    needs_answer_key: bool = False  # reference agents only: `AgentContext.answer_key` is set
    uses_model: bool = False  # it calls a model: pre-flight refuses it with model=none
    runs_in_sandbox: bool = False  # it runs its own program there (an installed CLI): gets `ctx.sandbox`,
    # and the sandbox binds what its `sandbox_mounts(work_dir)` names (it is a `SandboxAgent`)
    address_space_mb: int | None = None  # RLIMIT_AS its runtime needs in the local sandbox, if above the default


class CapabilityError(AgentError, TypeError):
    """An agent that does not declare its capabilities or lacks a method they imply; one line."""


def capabilities_of(agent: Any) -> Capabilities:
    """The declared capabilities of an agent class or object; CapabilityError if it declares none."""
    try:
        caps = agent.capabilities
    except AttributeError:
        caps = None
    if not isinstance(caps, Capabilities):
        name = agent.__name__ if isinstance(agent, type) else type(agent).__name__
        raise CapabilityError(f"agent {name} declares no capabilities (a class attribute `capabilities = "
                              "Capabilities(...)`, sdebench.agents.base)")
    return caps


@dataclass(frozen=True)
class AnswerKey:
    """The answer key of a task, given only to reference agents (`Capabilities.needs_answer_key`)."""

    fact: str  # the fact sentence
    fact_tokens: tuple[str, ...]  # every spelling that reveals the fact
    oracle_patch: str  # the reference fix (unified diff against HEAD)
    conventional_patch: str  # the conventional guess as a fix

    @classmethod
    def of(cls, task: Any) -> AnswerKey:
        """The answer key of a `sdebench.tasks.record.Task` (its patches are read from the task dir)."""
        return cls(task.fact, tuple(task.fact_tokens), task.oracle_patch, task.conventional_patch)


@dataclass
class AgentContext:
    """What an agent is given at the start of an episode: the public view of the task."""

    statement: str  # the bug report
    prompt_additions: list[str]  # what the delivery pushes into the prompt (memory, the fact under oracle)
    toolbox: Toolbox
    trajectory: EventLog
    limits: Limits
    seed: int = 0
    started_at: float = 0.0  # time.monotonic() at episode start, for the wall limit
    answer_key: AnswerKey | None = None  # set only for agents whose capabilities need it
    sandbox: Sandbox | None = None  # set only for agents that run in the sandbox (installed CLIs)


@dataclass
class RunResult:
    """Why `Agent.run` returned."""

    stop_reason: str  # submitted | max_turns | max_cost | max_wall | format_errors | error | agent_error | gave_up
    turns: int = 0  # agent turns in this run (model calls, or scripted steps)
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


STOP_SUBMITTED = "submitted"
# A run that failed ends in one of two ways, and only the first has no outcome (the analysis keeps
# it out of every rate, `retry_errors` reruns it): the model was dead (it failed every call since
# some point and a probe of the harness's own failed too: sdebench.agents.liveness), the set-up was
# broken, or the run failed before the model acted at all. After the model has acted, any other
# failure may be the agent's own doing (a request it made too long, a process its tool call killed),
# so it is an unresolved outcome: an agent must not be able to turn a miss into "no outcome" by crashing.
STOP_ERROR = "error"
STOP_AGENT_ERROR = "agent_error"


def failure_stop(model_acted: bool, infrastructure: bool) -> str:
    """The stop reason of a failed run: `error` (no outcome) for a dead model or broken set-up
    (`infrastructure`) or a failure before the model acted, else `agent_error` (an unresolved outcome)."""
    return STOP_AGENT_ERROR if model_acted and not infrastructure else STOP_ERROR


@runtime_checkable
class Agent(Protocol):
    """An agent acts only through its toolbox; the episode loop owns grading and feedback.

    Built by `sdebench.components.build_agent` as `cls.from_config({"agent": ..., "model": ...})`
    (its own config section and the model's, no other part of the run config) when the class has
    that classmethod, else `cls()`. Its class attribute `capabilities` says what else it asks of the
    episode (`Capabilities`: the answer key, a model, the sandbox). An agent running in this process
    is trusted code: the interface hands it nothing that names the task, but only a sandbox keeps
    code from looking.
    """

    name: str
    usage: Usage
    capabilities: ClassVar[Capabilities]

    def start(self, ctx: AgentContext) -> None:
        """Begin an episode (build the first prompt)."""
        ...

    def run(self) -> RunResult:
        """Act until `submit` or a limit; may be called again after `feedback`."""
        ...

    def feedback(self, text: str) -> None:
        """Receive the failing output of a grade as a user message before the next `run`."""
        ...

    def close(self) -> None:
        """Release what the agent holds; the episode calls it once when it ends, even after an error."""
        ...


@runtime_checkable
class SandboxAgent(Agent, Protocol):
    """An agent whose capabilities say `runs_in_sandbox`: it names what the sandbox binds for its program
    and counts the tools its program calls."""

    def sandbox_mounts(self, work_dir: Path) -> tuple[Mount, ...]:
        """The mounts to bind, laid out under `work_dir`; called before the sandbox opens."""
        ...

    def tool_calls(self) -> dict[str, int]:
        """The tools its program called, by name, beside the toolbox's (which the episode counts itself)."""
        ...
