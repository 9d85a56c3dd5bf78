"""The LLM agent: tool calling over a linear message history, until `submit` or a limit.

The loop builds the messages (prompts from conf/agent/llm.yaml), checks the episode's limits,
runs the tool calls of each reply through the toolbox and keeps the format-error count. Where
replies come from is a `ModelClient` (sdebench.agents.model): request building, retries and
pricing live there. `from_config` builds a `LiteLLMClient`; tests hand the agent an in-process
`sdebench.testing.scripted.ScriptedClient`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from sdebench.agents.accounting import add_call
from sdebench.agents.base import (
    STOP_ERROR,
    STOP_SUBMITTED,
    AgentContext,
    Capabilities,
    Limits,
    RunResult,
    Usage,
    failure_stop,
)
from sdebench.agents.liveness import REQUEST, Streak, dead_model
from sdebench.agents.model import Completion, ConfigError, LiteLLMClient, ModelClient, ModelReply
from sdebench.agents.prompts import PromptError, Prompts, additions_block

__all__ = ["AgentSettings", "ConfigError", "LLMAgent", "parse_arguments"]


@dataclass(frozen=True)
class AgentSettings:
    """The agent entry (conf/agent/llm.yaml) as the loop uses it; `retry` is the client's."""

    prompts: Prompts
    max_format_errors: int = 3

    @classmethod
    def from_config(cls, d: Mapping[str, Any]) -> AgentSettings:
        """Read the agent entry."""
        try:
            prompts = Prompts.from_config(d.get("prompts") or {})
        except PromptError as e:
            raise ConfigError(str(e)) from None
        mfe = int(d.get("max_format_errors", 3))
        if mfe < 1:
            raise ConfigError("agent.max_format_errors must be at least 1")
        return cls(prompts=prompts, max_format_errors=mfe)


def _schema_index(schemas: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for s in schemas:
        fn = s.get("function", s)
        out[fn["name"]] = fn.get("parameters") or {}
    return out


def parse_arguments(raw: Any, schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """Decode tool-call arguments and check the tool's required parameters are present."""
    if isinstance(raw, dict):
        args = raw
    else:
        text = (raw or "").strip()
        if not text:
            args = {}
        else:
            try:
                args = json.loads(text)
            except ValueError as e:
                return None, f"not valid JSON ({e})"
    if not isinstance(args, dict):
        return None, f"expected a JSON object, got {type(args).__name__}"
    # unknown keys are left to the toolbox (it ignores them); a missing required one is a format error
    missing = [k for k in schema.get("required") or [] if k not in args]
    if missing:
        return None, f"missing required argument(s) {missing}"
    return args, None


class LLMAgent:
    """Sends the whole conversation and the toolbox's tools to a model client until it submits or a limit hits."""

    name = "llm"
    capabilities: ClassVar[Capabilities] = Capabilities(uses_model=True)

    def __init__(self, settings: AgentSettings, client: ModelClient):
        self.settings = settings
        self.client = client
        self.usage = Usage()
        self.messages: list[dict[str, Any]] = []
        self.ctx: AgentContext | None = None
        self.turns = 0  # model replies in the whole episode (the max_turns budget)
        self.consecutive_format_errors = 0

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> LLMAgent:
        """Build from the `agent` and `model` sections of the run config; raises ConfigError (one line) if unusable."""
        agent = cfg.get("agent") or {}
        settings = AgentSettings.from_config(agent)
        return cls(settings, LiteLLMClient.from_config(cfg.get("model") or {}, agent.get("retry")))

    def _redact(self, text: str) -> str:
        for s in self.client.secrets():
            text = text.replace(s, "[REDACTED]")
        return text

    # --- protocol -------------------------------------------------------------------
    def start(self, ctx: AgentContext) -> None:
        """Build the system and instance messages."""
        self.ctx = ctx
        missing = [s for s in self.client.secrets() if s not in ctx.trajectory.redact]
        if missing:
            ctx.trajectory.redact = (*ctx.trajectory.redact, *missing)
        tools = ", ".join(ctx.toolbox.names())
        p = self.settings.prompts
        self.messages = [
            {"role": "system", "content": p.render("system", tools=tools)},
            {"role": "user", "content": p.render("instance", statement=ctx.statement,
                                                 additions=additions_block(ctx.prompt_additions), tools=tools)},
        ]
        ctx.trajectory.log("agent_start", agent=self.name, **self.client.describe(), tools=ctx.toolbox.names())
        for m in self.messages:
            ctx.trajectory.log("message", role=m["role"], content=m["content"])

    def close(self) -> None:
        """Nothing to release: the client holds no connection between calls."""

    def feedback(self, text: str) -> None:
        """Append the grader's failing output as a user message; the next run() continues."""
        msg = {"role": "user", "content": self.settings.prompts.render("feedback", feedback=text)}
        self.messages.append(msg)
        self.consecutive_format_errors = 0
        if self.ctx is not None:
            self.ctx.trajectory.log("message", role="user", content=msg["content"], feedback=True)

    def run(self) -> RunResult:
        """Call the model and its tools until submit or a limit; never raises for model/tool faults."""
        if self.ctx is None:
            raise RuntimeError("LLMAgent.run() before start()")
        ctx = self.ctx
        schemas = ctx.toolbox.schemas()
        index = _schema_index(schemas)
        turns = 0
        while True:
            stop = self._limit_hit(ctx.limits)
            if stop:
                return self._stop(stop, turns)
            # Never cross the cost cap: a call whose worst case (prompt at the input price, the output
            # cap at the output price) could cross it is not made.
            worst = self.client.worst_case_usd(self.messages, schemas)
            if self.usage.cost_usd + worst > ctx.limits.max_cost_usd:
                ctx.trajectory.log("limit", limit="max_cost", spent_usd=self.usage.cost_usd, worst_case_usd=worst,
                                   max_cost_usd=ctx.limits.max_cost_usd)
                return self._stop("max_cost", turns)
            c = self.client.complete(self.messages, schemas, seed=ctx.seed,
                                     deadline=ctx.started_at + ctx.limits.max_wall_s, log=ctx.trajectory.log)
            self.usage.retries += c.retries
            self.usage.model_s += c.failed_s
            if c.stop:
                # waiting out a model that keeps failing is not the agent's wall limit if the model is dead
                dead = self._dead_model(c) if c.cause is not None else None
                return self._stop(STOP_ERROR, turns, error=dead) if dead else self._stop(c.stop, turns)
            if c.replied:
                turns += 1
                self.turns += 1
            if c.reply is None:
                # Only a dead model (or a broken set-up) makes a failed call no outcome; a request the
                # model refused after it had acted (its context grown too long) is the agent's.
                dead = self._dead_model(c)
                return self._stop(failure_stop(self.turns > 0, dead is not None), turns,
                                  error=dead or c.error or "the model client returned no reply")
            submitted, faulty = self._handle(c.reply, index)
            if submitted:
                return self._stop(STOP_SUBMITTED, turns)
            if faulty:
                self.usage.format_errors += 1
                self.consecutive_format_errors += 1
                if self.consecutive_format_errors >= self.settings.max_format_errors:
                    return self._stop("format_errors", turns)
            else:
                self.consecutive_format_errors = 0

    # --- one turn -------------------------------------------------------------------
    def _dead_model(self, c: Completion) -> str | None:
        """Why the model is dead after the failed call `c` (sdebench.agents.liveness), or None."""
        assert self.ctx is not None
        if c.cause is None or c.cause == REQUEST:
            return None
        streak = Streak()
        for _ in range(c.retries + (1 if c.error else 0)):
            streak.fail(c.cause, c.error or "no answer")
        return dead_model(streak, self.client.probe, self.ctx.trajectory.log)

    def _limit_hit(self, limits: Limits) -> str | None:
        assert self.ctx is not None
        if self.turns >= limits.max_turns:
            return "max_turns"
        if self.usage.cost_usd >= limits.max_cost_usd:
            return "max_cost"
        if limits.max_wall_s - (time.monotonic() - self.ctx.started_at) <= 0:
            return "max_wall"
        return None

    def _stop(self, reason: str, turns: int, error: str | None = None) -> RunResult:
        assert self.ctx is not None
        if error is not None:
            error = self._redact(error)
        self.ctx.trajectory.log("agent_stop", stop_reason=reason, turns=turns, error=error,
                                usage=vars(self.usage).copy())
        return RunResult(stop_reason=reason, turns=turns, error=error)

    def _handle(self, reply: ModelReply, index: dict[str, dict[str, Any]]) -> tuple[bool, bool]:
        """Account the reply, run its tool calls; returns (submitted, faulty reply)."""
        assert self.ctx is not None
        ctx = self.ctx
        add_call(self.usage, reply.account)  # charged even if the reply turns out unusable
        msg = reply.message
        self.messages.append(msg)
        ctx.trajectory.log("model_call", turn=self.turns, finish_reason=reply.finish_reason,
                           message=msg, **reply.account.to_dict(), total_cost_usd=self.usage.cost_usd)
        calls = msg.get("tool_calls") or []
        if not calls:
            tools = ", ".join(index)
            text = self.settings.prompts.render("no_tool_call", tools=tools)
            self.messages.append({"role": "user", "content": text})
            ctx.trajectory.log("format_error", reason="no_tool_call", message=text)
            return False, True
        faulty = False
        submitted = False
        # a toolbox that logs its calls to the trajectory already records each result (output included)
        toolbox_logs = bool(ctx.toolbox.logs_calls)
        for call in calls:
            name, raw = call["function"]["name"], call["function"]["arguments"]
            if submitted:
                self._tool_message(call, self.settings.prompts.render("skipped_after_submit", name=name))
                continue
            if name not in index:
                faulty = True
                text = self.settings.prompts.render("unknown_tool", name=name, available=", ".join(index))
                ctx.trajectory.log("format_error", reason="unknown_tool", tool=name, message=text)
                self._tool_message(call, text)
                continue
            args, err = parse_arguments(raw, index[name])
            if args is None:
                faulty = True
                text = self.settings.prompts.render("bad_arguments", name=name, error=err)
                ctx.trajectory.log("format_error", reason="bad_arguments", tool=name, arguments=raw, message=text)
                self._tool_message(call, text)
                continue
            result = ctx.toolbox.call(name, args)
            if not toolbox_logs:
                ctx.trajectory.log("tool_result", id=call["id"], name=name, arguments=args, output=result.output,
                                   error=result.error, submitted=result.submitted,
                                   duration_s=round(result.duration_s, 4))
            self._tool_message(call, result.output)
            submitted = submitted or result.submitted
        return submitted, faulty

    def _tool_message(self, call: dict[str, Any], content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                              "content": content})
