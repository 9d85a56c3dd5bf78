"""Installed agents: a real coding-agent CLI run in the episode's sandbox, behind the model gateway.

An adapter says how its CLI is installed (`InstallSpec`), how it takes a task and how it resumes a
session; this base does the rest, the same for every CLI:

- installs the pinned version once into the agent cache (`install.py`), bound read-only into the
  sandbox at the neutral path /opt/agent;
- gives the agent a throwaway HOME (a host dir of the episode bound read-write at `/tmp/agent/home`,
  so the session survives between the first run and each resume);
- starts the episode's gateway on a unix socket bound at `/tmp/agent/gateway/`, with the memory
  tool over MCP when the delivery has one, and the same search as a `memory_search` command on the
  CLI's PATH (named in the prompt of a CLI without an MCP client); inside the sandbox a relay turns
  127.0.0.1:PORT into that socket, and nothing else is reachable;
- runs the CLI in the workspace with the statement and the delivery's prompt additions, treats its
  exit as a submit, and after a failing grade resumes the same session with the feedback;
- ends a run whose model died (every call failed since some point, and the gateway's own probe
  fails too: sdebench.agents.liveness) as an error, whatever the CLI then did; any other failure
  after the model acted is the agent's (`agent_error`, an unresolved outcome).

Installed agents are non-reference agents: they see the statement, the prompt additions and the
workspace, never the task record (id, fact, patches). They need a sandbox with its own network
namespace (`sandbox=local` or `sandbox=docker`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import string
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from sdebench.agents.accounting import Pricing, PricingError, import_litellm, resolve_pricing
from sdebench.agents.base import (
    STOP_ERROR,
    STOP_SUBMITTED,
    AgentContext,
    Capabilities,
    RunResult,
    Usage,
    failure_stop,
)
from sdebench.agents.installed.install import (
    InstallError,
    InstallSpec,
    cache_root,
    ensure_installed,
    find_bin,
)
from sdebench.agents.model import ConfigError, ModelSettings
from sdebench.agents.prompts import additions_block
from sdebench.errors import AgentError
from sdebench.sandbox.base import Mount

INSIDE = "/tmp/agent"  # where the agent's own dirs appear in the sandbox (a fresh tmpfs on both backends)
AGENT_DIR = "/opt/agent"  # where the CLI's install appears in the sandbox: a neutral path, not the host cache's
HOME = f"{INSIDE}/home"
GATEWAY_DIR = f"{INSIDE}/gateway"
SOCKET = "gateway.sock"
RELAY = "relay.py"
COMMANDS = "bin"  # the episode's own commands (`memory_search` under memtool), first on the CLI's PATH
MEMORY_COMMAND = "memory_search"
COMMAND_SETTINGS = "memory_search.json"
DEFAULT_PORT = 8377
DEFAULT_DEAD_MODEL_S = 60.0
TAIL_CHARS = 2000
PROMPT_FIELDS = {"instance": ("statement", "additions"), "feedback": ("feedback",)}
DEFAULT_PROMPTS = {
    "instance": "Fix the following issue in the repository in the current directory.\n\n<issue>\n{statement}\n</issue>\n\n"
                "{additions}\n\nDo not edit or delete tests: the fix is judged by a held-out copy of the test suite. "
                "When the fix is done, stop.",
    "feedback": "Your fix was graded and the issue is not resolved yet. Failing output of the grader:\n\n"
                "<grader-output>\n{feedback}\n</grader-output>\n\nKeep working on the same repository, then stop.",
}


def bm25_description() -> str:
    """The BM25 search's own description (the command's help and prompt line)."""
    from sdebench.delivery.bm25 import DESCRIPTION

    return DESCRIPTION


def memory_command_note() -> str:
    """The prompt's line naming the `memory_search` command (the tool's own description)."""
    return f"The shell has a `{MEMORY_COMMAND}` command (`{MEMORY_COMMAND} [-k N] QUERY`). {bm25_description()}"


class InstalledAgentError(AgentError, RuntimeError):
    """An installed agent cannot run in this episode (no sandbox isolation, no install)."""


def check_prompts(d: Mapping[str, Any]) -> dict[str, str]:
    """The prompt templates of an installed agent (defaults filled in; unknown fields rejected)."""
    out = dict(DEFAULT_PROMPTS)
    for key, value in (d or {}).items():
        if key not in PROMPT_FIELDS:
            raise ConfigError(f"agent.prompts.{key} is not a prompt of installed agents (choose {', '.join(PROMPT_FIELDS)})")
        if not isinstance(value, str):
            raise ConfigError(f"agent.prompts.{key} must be a string")
        used = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
        bad = sorted(used - set(PROMPT_FIELDS[key]))
        if bad:
            raise ConfigError(f"agent.prompts.{key} uses unknown field(s) {bad}; allowed: {list(PROMPT_FIELDS[key])}")
        out[key] = value
    return out


@dataclass(frozen=True)
class InstalledSettings:
    """The agent entry of an installed agent (conf/agent/<name>.yaml)."""

    name: str
    version: str
    cache_dir: str | None = None
    port: int = DEFAULT_PORT
    prompts: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PROMPTS))
    args: tuple[str, ...] = ()  # extra CLI arguments
    env: dict[str, str] = field(default_factory=dict)  # extra environment for the CLI
    # every model call failing for this long (and the gateway's probe too) ends the run as an error
    dead_model_s: float = DEFAULT_DEAD_MODEL_S
    options: dict[str, Any] = field(default_factory=dict)  # adapter-specific keys

    COMMON = ("name", "version", "cache_dir", "port", "prompts", "args", "env", "dead_model_s")

    @classmethod
    def from_config(cls, d: Mapping[str, Any], default_version: str) -> InstalledSettings:
        """Read the agent entry; adapter-specific keys land in `options`."""
        version = str(d.get("version") or default_version)
        port = int(d.get("port") or DEFAULT_PORT)
        if not 1024 <= port <= 65535:
            raise ConfigError("agent.port must be in 1024-65535")
        env = {str(k): str(v) for k, v in dict(d.get("env") or {}).items()}
        dead = d.get("dead_model_s")
        try:
            dead = DEFAULT_DEAD_MODEL_S if dead is None else float(dead)
        except (TypeError, ValueError):
            dead = -1.0
        if not dead >= 0:
            raise ConfigError("agent.dead_model_s must be a number of seconds (0 or more)")
        return cls(name=str(d.get("name")), version=version, cache_dir=d.get("cache_dir") or None, port=port,
                   prompts=check_prompts(d.get("prompts") or {}), args=tuple(str(a) for a in d.get("args") or ()),
                   env=env, dead_model_s=dead, options={k: v for k, v in d.items() if k not in cls.COMMON})


class InstalledAgent:
    """The common part of every installed agent; subclasses set `spec` and the command lines."""

    name = "installed"
    spec: InstallSpec  # the default install (version overridable by agent.version)
    options: tuple[str, ...] = ()  # adapter-specific config keys it accepts
    driver: str | None = None  # a script next to this module, placed beside the relay (GATEWAY_DIR)
    # its CLI runs in the sandbox the episode hands it, calls a model, never sees the answer key
    capabilities: ClassVar[Capabilities] = Capabilities(uses_model=True, runs_in_sandbox=True)
    mcp_client = True  # it takes the memory tool over MCP; without one, the prompt names the `memory_search` command
    # its name for a memory tool, as the model calls it (`{}`: the memory system's name for it); the
    # episode counts memory tools from the toolbox, so `tool_calls` leaves these out
    memory_tool_format = "mcp__memory__{}"

    def __init__(self, settings: InstalledSettings, model: ModelSettings, pricing: Pricing):
        self.settings = settings
        self.model = model
        self.pricing = pricing
        self.name = settings.name
        self.spec = replace(self.spec, version=settings.version)
        self.ctx: AgentContext | None = None
        self.gateway: Any = None
        self.host_dir: Path | None = None
        self.gateway_dir: Path | None = None
        self.install_dir: Path | None = None  # the install as commands see it (AGENT_DIR)
        self.host_install: Path | None = None  # the same install on the host (the agent cache)
        self.executable: str = ""
        self.runs = 0
        self.pending_feedback: str | None = None
        self._usage = Usage()

    # --- construction ---------------------------------------------------------------------------
    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> InstalledAgent:
        """Build from the `agent` and `model` sections of the run config; raises ConfigError (one line) if unusable."""
        settings = InstalledSettings.from_config(cfg.get("agent") or {}, cls.spec.version)
        unknown = sorted(set(settings.options) - set(cls.options))
        if unknown:
            raise ConfigError(f"agent {settings.name}: unknown option(s) {unknown}")
        model = ModelSettings.from_config(cfg.get("model") or {})
        model.api_key()
        try:
            pricing = resolve_pricing(model.litellm_model, model.prices, model.cost_tracking)
        except PricingError as e:
            raise ConfigError(str(e)) from None
        return cls(settings, model, pricing)

    @property
    def usage(self) -> Usage:
        """The gateway's metered totals (zero before the gateway starts)."""
        return self.gateway.usage if self.gateway is not None else self._usage

    def secrets(self) -> tuple[str, ...]:
        """Values never to be written anywhere: the model key and the episode token."""
        key = os.environ.get(self.model.api_key_env) if self.model.api_key_env else None
        token = self.gateway.token if self.gateway is not None else None
        return tuple(s for s in (key, token) if s)

    # --- the episode's sandbox ------------------------------------------------------------------
    def sandbox_mounts(self, work_dir: Path) -> tuple[Mount, ...]:
        """Install the CLI if needed and lay out the host dirs the sandbox binds (called before it opens)."""
        try:
            self.host_install = ensure_installed(self.spec, cache_root(self.settings.cache_dir))
        except InstallError as e:
            raise InstalledAgentError(f"cannot install {self.spec.package}@{self.spec.version}: {e}") from None
        exe = find_bin(self.host_install, self.spec.bin)
        assert exe is not None
        self.install_dir = Path(AGENT_DIR)
        self.executable = str(self.install_dir / exe.relative_to(self.host_install))
        self.host_dir = Path(work_dir) / "agent"
        home = self.host_dir / "home"
        home.mkdir(parents=True, exist_ok=True)
        os.chmod(home, 0o777)  # the docker sandbox runs as an unprivileged user
        os.chmod(self.host_dir, 0o755)
        # A unix socket path has at most 107 bytes: the socket's dir is a short one of its own.
        self.gateway_dir = Path(tempfile.mkdtemp(prefix="sdb-gw-", dir="/tmp" if Path("/tmp").is_dir() else None))
        gw = self.gateway_dir
        os.chmod(gw, 0o755)
        shutil.copyfile(Path(__file__).resolve().parents[2] / "gateway" / RELAY, gw / RELAY)
        if self.driver is not None:
            shutil.copyfile(Path(__file__).with_name(self.driver), gw / self.driver)
        return (
            Mount(str(self.host_install), AGENT_DIR, read_only=True),
            Mount(str(home), HOME, read_only=False),
            Mount(str(gw), GATEWAY_DIR, read_only=True, live=True),  # its socket appears once the gateway starts
        )

    @property
    def host_home(self) -> Path:
        """The agent's HOME as a host path."""
        assert self.host_dir is not None
        return self.host_dir / "home"

    @property
    def gateway_url(self) -> str:
        """The gateway as the agent reaches it inside the sandbox."""
        return f"http://127.0.0.1:{self.settings.port}"

    # --- protocol -------------------------------------------------------------------------------
    def start(self, ctx: AgentContext) -> None:
        """Start the gateway and write the agent's configuration into its HOME."""
        from sdebench.gateway.server import make_gateway

        self.ctx = ctx
        sandbox = ctx.sandbox
        if sandbox is None or type(sandbox).__name__ not in ("LocalSandbox", "DockerSandbox"):
            raise InstalledAgentError(
                f"agent {self.name} needs sandbox=local or sandbox=docker (its own network namespace, "
                f"where only the gateway is reachable); got {type(sandbox).__name__}")
        if self.host_dir is None:
            raise InstalledAgentError("sandbox_mounts() was not called before the sandbox opened")
        import_litellm()  # once, before any call is timed
        self.gateway = make_gateway(self.model, self.pricing, ctx.limits, ctx.started_at, ctx.trajectory.log,
                                    toolbox=ctx.toolbox, seed=ctx.seed, route=self.model.gateway_route,
                                    dead_after_s=self.settings.dead_model_s)
        missing = [s for s in self.secrets() if s not in ctx.trajectory.redact]
        if missing:
            ctx.trajectory.redact = (*ctx.trajectory.redact, *missing)
        self.gateway.redact = self.secrets()
        self.gateway.start(socket_path=self.gateway_dir / SOCKET)
        if self.gateway.has_memory and not self.mcp_client and ctx.toolbox.memory_names() != [MEMORY_COMMAND]:
            raise InstalledAgentError(f"{self.name} has no MCP client: only memory=bm25 reaches it (as the "
                                      f"`{MEMORY_COMMAND}` command), not {', '.join(ctx.toolbox.memory_names())}")
        if self.gateway.has_memory and MEMORY_COMMAND in ctx.toolbox.memory_names():
            self.write_memory_command()
        self.write_config()
        ctx.trajectory.log("agent_start", agent=self.name, package=self.spec.package, version=self.spec.version,
                           model=self.model.name, litellm_model=self.model.litellm_model, pricing=self.pricing.mode,
                           memory_tool=self.gateway.has_memory, prompt=self.instance_prompt())

    def write_memory_command(self) -> None:
        """Put the `memory_search` command (and its settings: socket, token, description) into the
        gateway dir, on the CLI's PATH: the memory tool for anything with a shell."""
        from sdebench.gateway.mcp_memory import COMMAND_PATH

        assert self.gateway_dir is not None
        bin_dir = self.gateway_dir / COMMANDS
        bin_dir.mkdir(exist_ok=True)
        os.chmod(bin_dir, 0o755)
        command = bin_dir / MEMORY_COMMAND
        shutil.copyfile(Path(__file__).resolve().parents[2] / "gateway" / "memory_command.py", command)
        os.chmod(command, 0o755)
        settings = {"socket": f"{GATEWAY_DIR}/{SOCKET}", "path": COMMAND_PATH, "token": self.token(),
                    "description": bm25_description()}
        (self.gateway_dir / COMMAND_SETTINGS).write_text(json.dumps(settings))
        os.chmod(self.gateway_dir / COMMAND_SETTINGS, 0o644)

    def instance_prompt(self) -> str:
        """The task as this agent gets it: the statement plus the delivery's additions (and, for a CLI
        without an MCP client under memtool, the `memory_search` command)."""
        assert self.ctx is not None
        additions = list(self.ctx.prompt_additions)
        if self.gateway is not None and self.gateway.has_memory and not self.mcp_client:
            additions.append(memory_command_note())
        text = self.settings.prompts["instance"].format(statement=self.ctx.statement, additions=additions_block(additions))
        return "\n".join(line.rstrip() for line in text.strip().splitlines()).replace("\n\n\n", "\n\n")

    def feedback(self, text: str) -> None:
        """Keep the grader's failing output for the next run, which resumes the session."""
        self.pending_feedback = self.settings.prompts["feedback"].format(feedback=text).strip()
        if self.ctx is not None:
            self.ctx.trajectory.log("message", role="user", content=self.pending_feedback, feedback=True)

    def run(self) -> RunResult:
        """Run the CLI (first the task, later a resume with the feedback) until it exits."""
        if self.ctx is None or self.gateway is None:
            raise RuntimeError(f"{self.name}: run() before start()")
        ctx = self.ctx
        resume = self.runs > 0
        prompt = self.pending_feedback if resume and self.pending_feedback else self.instance_prompt()
        self.pending_feedback = None
        left = self.gateway.meter.wall_left()
        if left <= 1:
            return self._stop("max_wall", 0)
        argv = self.command(prompt, resume)
        out_file = f"{HOME}/.sdebench-run-{self.runs + 1}.out"
        cmd = ["python3", f"{GATEWAY_DIR}/{RELAY}", "--port", str(self.settings.port), "--socket",
               f"{GATEWAY_DIR}/{SOCKET}", "--stdout", out_file]
        if self.gateway.has_memory:
            cmd += ["--path-prepend", f"{GATEWAY_DIR}/{COMMANDS}"]
        cmd += ["--", *argv]
        env = {"HOME": HOME, **self.environment(), **self.settings.env}
        calls0, refused0 = self.gateway.meter.usage.model_calls, self.gateway.meter.refused
        ctx.trajectory.log("agent_run", run=self.runs + 1, resume=resume, command=shlex.join(argv[:1] + ["..."]))
        t0 = time.monotonic()
        res = ctx.sandbox.exec(cmd, timeout=left, env=env)
        self.runs += 1
        turns = self.gateway.meter.usage.model_calls - calls0  # answered calls only: a failed one is no turn
        stdout = self._read_home(f".sdebench-run-{self.runs}.out")
        ctx.trajectory.log("agent_exit", run=self.runs, exit_code=res.exit_code, timed_out=res.timed_out,
                           duration_s=round(time.monotonic() - t0, 3), model_calls=turns,
                           stdout_tail=stdout[-TAIL_CHARS:], stderr_tail=res.stderr[-TAIL_CHARS:])
        self.after_run(stdout, res)
        # A dead model first: whatever the CLI then did (gave up, hit a limit of its own or of the
        # gateway, was killed at the wall, exited 0), the run has no outcome.
        dead = self.gateway.dead_model()
        if dead:
            return self._stop(STOP_ERROR, turns, f"{self.name}: {dead}")
        if self.gateway.meter.refused > refused0:
            return self._stop(self.gateway.meter.stop_reason or STOP_ERROR, turns)
        if res.timed_out:
            return self._stop("max_wall", turns)
        # any other failure: before the model acted, the set-up's (no outcome); after, the agent's
        failed = failure_stop(self.gateway.meter.usage.model_calls > 0, infrastructure=False)
        if res.exit_code != 0:
            why = (res.stderr.strip() or stdout.strip())[-400:].replace("\n", " | ")
            if self.gateway.last_error:
                why += f" (last model error: {self.gateway.last_error})"
            return self._stop(failed, turns, f"{self.name} exited with code {res.exit_code}: {why}")
        problem = self.run_error(stdout)
        if problem:
            return self._stop(failed, turns, problem)
        return self._stop(STOP_SUBMITTED, turns)

    def tool_calls(self) -> dict[str, int]:
        """The tools the CLI called, by the names its model used, with its memory tool left out (the
        episode counts `memory_search` from the toolbox, which also sees the command's calls)."""
        if self.gateway is None:
            return {}
        assert self.ctx is not None
        own = {self.memory_tool_format.format(m) for m in self.ctx.toolbox.memory_names()}
        return {name: n for name, n in self.gateway.meter.tool_calls.items() if name not in own}

    def close(self) -> None:
        """Stop the gateway (the episode calls it when it ends)."""
        if self.gateway is not None:
            self.gateway.stop()
        if self.gateway_dir is not None:
            shutil.rmtree(self.gateway_dir, ignore_errors=True)

    def _read_home(self, rel: str) -> str:
        try:
            return (self.host_home / rel).read_text(errors="replace")
        except OSError:
            return ""

    def _stop(self, reason: str, turns: int, error: str | None = None) -> RunResult:
        assert self.ctx is not None
        if error:
            for s in self.secrets():
                error = error.replace(s, "[REDACTED]")
        extra = {"agent_tool_calls": self.tool_calls()} if self.gateway is not None else {}
        self.ctx.trajectory.log("agent_stop", stop_reason=reason, turns=turns, error=error, usage=vars(self.usage).copy())
        return RunResult(stop_reason=reason, turns=turns, error=error, extra=extra)

    # --- what each adapter says -----------------------------------------------------------------
    def command(self, prompt: str, resume: bool) -> list[str]:
        """The CLI's argv for a first run (`resume` False) or a resume with `prompt`."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """Environment of the CLI (HOME is set by the base)."""
        return {}

    def write_config(self) -> None:
        """Write the CLI's configuration files into `self.host_home` (after the gateway started)."""

    def after_run(self, stdout: str, res: Any) -> None:
        """Read what a run left (a session id) from its stdout."""

    def run_error(self, stdout: str) -> str | None:
        """A failure the CLI reported despite exit code 0, or None."""
        return None

    def mcp_url(self) -> str:
        """The memory tool's MCP endpoint as the agent reaches it."""
        return f"{self.gateway_url}/mcp"

    def token(self) -> str:
        """The episode token the agent sends instead of a key."""
        assert self.gateway is not None
        return self.gateway.token

    def write_home(self, rel: str, text: str) -> Path:
        """Write a file into the agent's HOME (readable by the sandbox user)."""
        p = self.host_home / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        d = p.parent
        while d != self.host_home and d.is_relative_to(self.host_home):
            os.chmod(d, 0o777)
            d = d.parent
        p.write_text(text)
        os.chmod(p, 0o666)
        return p
