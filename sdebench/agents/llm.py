"""The LLM agent: tool calling through `litellm.completion` over a linear message history.

litellm is imported only when a model is first called (or priced), with the bundled price map
forced, so commands that never use this agent start fast and never touch the network.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdebench.agents.accounting import (
    Pricing,
    PricingError,
    account_call,
    add_call,
    import_litellm,
    resolve_pricing,
)
from sdebench.agents.base import STOP_SUBMITTED, AgentContext, Limits, RunResult, Usage
from sdebench.agents.prompts import PromptError, Prompts, additions_block

# a placeholder for OpenAI-compatible servers that need no key (the OpenAI client insists on one)
NO_KEY = "EMPTY"
RETRY_STATUS = {408, 409, 429}  # plus every 5xx


class ConfigError(ValueError):
    """The agent or model config is unusable."""


@dataclass(frozen=True)
class RetrySettings:
    """Retries of one model call."""

    max_retries: int = 6
    backoff_base_s: float = 2.0
    backoff_max_s: float = 60.0
    request_timeout_s: float = 600.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Sleep before retry `attempt` (0-based): exponential, capped, jittered in [0.5, 1]."""
        return min(self.backoff_base_s * 2**attempt, self.backoff_max_s) * rng.uniform(0.5, 1.0)


@dataclass(frozen=True)
class ModelSettings:
    """One conf/model entry."""

    name: str
    litellm_model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = None
    send_seed: bool = False  # pass the episode's seed as `seed` (OpenAI, vLLM); Anthropic has no such parameter
    prices: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, d: Mapping[str, Any]) -> ModelSettings:
        """Read a model entry; a missing litellm model string is an error."""
        model = d.get("litellm_model")
        if not isinstance(model, str) or not model:
            raise ConfigError("model.litellm_model is required (a litellm model string such as openai/gpt-4.1-mini)")
        return cls(
            name=str(d.get("name") or model),
            litellm_model=model,
            api_base=d.get("api_base") or None,
            api_key_env=d.get("api_key_env") or None,
            temperature=d.get("temperature"),
            max_tokens=d.get("max_tokens"),
            send_seed=bool(d.get("send_seed", False)),
            prices=dict(d.get("prices") or {}),
            extra=dict(d.get("extra") or {}),
        )

    def api_key(self) -> str | None:
        """The key, read from the environment at call time (None: let litellm find one itself)."""
        if self.api_key_env is None:
            return NO_KEY if self.api_base else None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(f"model {self.name} needs the API key in env var {self.api_key_env}, which is unset")
        return key


@dataclass(frozen=True)
class AgentSettings:
    """The agent entry (conf/agent/llm.yaml)."""

    prompts: Prompts
    max_format_errors: int = 3
    retry: RetrySettings = RetrySettings()

    @classmethod
    def from_config(cls, d: Mapping[str, Any]) -> AgentSettings:
        """Read the agent entry."""
        try:
            prompts = Prompts.from_config(d.get("prompts") or {})
        except PromptError as e:
            raise ConfigError(str(e)) from None
        r = dict(d.get("retry") or {})
        unknown = set(r) - set(RetrySettings.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"agent.retry has unknown key(s): {sorted(unknown)}")
        mfe = int(d.get("max_format_errors", 3))
        if mfe < 1:
            raise ConfigError("agent.max_format_errors must be at least 1")
        return cls(prompts=prompts, max_format_errors=mfe, retry=RetrySettings(**r))


@dataclass
class _Reply:
    """What one model call produced, or why it failed."""

    response: Any = None
    latency_s: float = 0.0
    error: str | None = None  # a non-retryable failure, or retries exhausted
    stop: str | None = None  # a limit hit while waiting to retry


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, timeouts, connection failures and 5xx are worth retrying; other 4xx are not."""
    name = type(exc).__name__
    if name in ("Timeout", "APITimeoutError", "APIConnectionError", "ServiceUnavailableError",
                "InternalServerError", "RateLimitError", "BadGatewayError"):
        return True
    code = _status(exc)
    if code is None:
        return False
    return code in RETRY_STATUS or code >= 500


def _message_dict(msg: Any) -> dict[str, Any]:
    """The assistant message as it goes back into the history (OpenAI format)."""
    out: dict[str, Any] = {"role": "assistant", "content": getattr(msg, "content", None)}
    calls = []
    for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
        fn = getattr(tc, "function", None)
        args = getattr(fn, "arguments", None) or ""
        if not isinstance(args, str):  # some providers hand back an object; the history needs JSON text
            args = json.dumps(args)
        calls.append({
            "id": getattr(tc, "id", None) or f"call_{i}",
            "type": "function",
            "function": {"name": getattr(fn, "name", None) or "", "arguments": args},
        })
    if calls:
        out["tool_calls"] = calls
    elif not out["content"]:
        out["content"] = "(empty reply)"  # an assistant message needs content or tool calls to be resent
    blocks = getattr(msg, "thinking_blocks", None)
    if blocks:  # Anthropic extended thinking must be echoed back alongside tool calls
        out["thinking_blocks"] = blocks
    return out


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
    """Calls a model with the whole conversation and the toolbox's tools until it submits or a limit hits."""

    name = "llm"

    def __init__(self, settings: AgentSettings, model: ModelSettings, pricing: Pricing):
        self.settings = settings
        self.model = model
        self.pricing = pricing
        self.usage = Usage()
        self.messages: list[dict[str, Any]] = []
        self.ctx: AgentContext | None = None
        self.turns = 0  # model replies in the whole episode (the max_turns budget)
        self.consecutive_format_errors = 0
        self.rng = random.Random()

    # --- construction ---------------------------------------------------------------
    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> LLMAgent:
        """Build from the whole resolved run config; raises ConfigError (one line) if unusable."""
        settings = AgentSettings.from_config(cfg.get("agent") or {})
        model = ModelSettings.from_config(cfg.get("model") or {})
        model.api_key()  # fail now, not at the first call, if the key's env var is unset
        try:
            pricing = resolve_pricing(model.litellm_model, model.prices, str(cfg.get("cost_tracking", "strict")))
        except PricingError as e:
            raise ConfigError(str(e)) from None
        return cls(settings, model, pricing)

    def secrets(self) -> tuple[str, ...]:
        """Values that must never be written anywhere (for trajectory/log redaction)."""
        key = os.environ.get(self.model.api_key_env) if self.model.api_key_env else None
        return (key,) if key else ()

    def _redact(self, text: str) -> str:
        for s in self.secrets():
            text = text.replace(s, "[REDACTED]")
        return text

    # --- protocol -------------------------------------------------------------------
    def start(self, ctx: AgentContext) -> None:
        """Build the system and instance messages."""
        self.ctx = ctx
        missing = [s for s in self.secrets() if s not in ctx.trajectory.redact]
        if missing:
            ctx.trajectory.redact = (*ctx.trajectory.redact, *missing)
        tools = ", ".join(ctx.toolbox.names())
        p = self.settings.prompts
        self.messages = [
            {"role": "system", "content": p.render("system", tools=tools)},
            {"role": "user", "content": p.render("instance", statement=ctx.statement,
                                                 additions=additions_block(ctx.prompt_additions), tools=tools)},
        ]
        ctx.trajectory.log("agent_start", agent=self.name, model=self.model.name,
                           litellm_model=self.model.litellm_model, api_base=self.model.api_base,
                           pricing=self.pricing.mode, tools=ctx.toolbox.names())
        for m in self.messages:
            ctx.trajectory.log("message", role=m["role"], content=m["content"])

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
            reply = self._complete(schemas, ctx.limits)
            if reply.stop:
                return self._stop(reply.stop, turns)
            if reply.error is not None:
                return self._stop("error", turns, error=reply.error)
            turns += 1
            self.turns += 1
            try:
                submitted, faulty = self._handle(reply, index)
            except PricingError as e:
                return self._stop("error", turns, error=str(e))
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
    def _limit_hit(self, limits: Limits) -> str | None:
        if self.turns >= limits.max_turns:
            return "max_turns"
        if self.usage.cost_usd >= limits.max_cost_usd:
            return "max_cost"
        if self._wall_left(limits) <= 0:
            return "max_wall"
        return None

    def _wall_left(self, limits: Limits) -> float:
        assert self.ctx is not None
        return limits.max_wall_s - (time.monotonic() - self.ctx.started_at)

    def _stop(self, reason: str, turns: int, error: str | None = None) -> RunResult:
        assert self.ctx is not None
        if error is not None:
            error = self._redact(error)
        self.ctx.trajectory.log("agent_stop", stop_reason=reason, turns=turns, error=error,
                                usage=vars(self.usage).copy())
        return RunResult(stop_reason=reason, turns=turns, error=error)

    def _request(self, schemas: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
        m = self.model
        kwargs: dict[str, Any] = {
            **m.extra,
            "model": m.litellm_model,
            "messages": self.messages,
            "timeout": timeout,
            "max_retries": 0,  # retries are ours: counted, logged and bounded by the wall budget
            "num_retries": 0,
        }
        if schemas:
            kwargs["tools"] = schemas
        if m.api_base:
            kwargs["api_base"] = m.api_base
        if m.temperature is not None:
            kwargs["temperature"] = m.temperature
        if m.max_tokens is not None:
            kwargs["max_tokens"] = m.max_tokens
        if m.send_seed and self.ctx is not None:
            kwargs["seed"] = self.ctx.seed
        key = m.api_key()
        if key is not None:
            kwargs["api_key"] = key
        return kwargs

    def _complete(self, schemas: list[dict[str, Any]], limits: Limits) -> _Reply:
        """One model call with retries on transient failures."""
        assert self.ctx is not None
        litellm = import_litellm()
        retry = self.settings.retry
        attempt = 0
        while True:
            left = self._wall_left(limits)
            if left <= 0:
                return _Reply(stop="max_wall")
            try:
                kwargs = self._request(schemas, min(retry.request_timeout_s, left))
            except ConfigError as e:
                return _Reply(error=str(e))
            t0 = time.monotonic()
            try:
                response = litellm.completion(**kwargs)
            except Exception as e:  # noqa: BLE001 - every failure is classified, logged and reported
                elapsed = time.monotonic() - t0
                self.usage.model_s += elapsed
                msg = self._redact(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
                if not is_retryable(e):
                    self.ctx.trajectory.log("model_error", error=msg, status=_status(e), retryable=False)
                    return _Reply(error=msg)
                if attempt >= retry.max_retries:
                    self.ctx.trajectory.log("model_error", error=msg, status=_status(e), retryable=True)
                    return _Reply(error=f"gave up after {attempt} retries: {msg}")
                sleep = retry.backoff(attempt, self.rng)
                if sleep >= self._wall_left(limits):
                    return _Reply(stop="max_wall")
                self.usage.retries += 1
                self.ctx.trajectory.log("retry", attempt=attempt + 1, error=msg, status=_status(e),
                                        sleep_s=round(sleep, 3), elapsed_s=round(elapsed, 3))
                time.sleep(sleep)
                attempt += 1
                continue
            return _Reply(response=response, latency_s=time.monotonic() - t0)

    def _handle(self, reply: _Reply, index: dict[str, dict[str, Any]]) -> tuple[bool, bool]:
        """Account the reply, run its tool calls; returns (submitted, faulty reply)."""
        assert self.ctx is not None
        ctx = self.ctx
        response = reply.response
        account = account_call(self.pricing, response, reply.latency_s)
        add_call(self.usage, account)  # charged even if the reply turns out unusable
        choice = response.choices[0] if getattr(response, "choices", None) else None
        msg = _message_dict(getattr(choice, "message", None))
        self.messages.append(msg)
        ctx.trajectory.log("model_call", turn=self.turns, finish_reason=getattr(choice, "finish_reason", None),
                           message=msg, **account.to_dict(), total_cost_usd=self.usage.cost_usd)
        calls = msg.get("tool_calls") or []
        if not calls:
            tools = ", ".join(index)
            text = self.settings.prompts.render("no_tool_call", tools=tools)
            self.messages.append({"role": "user", "content": text})
            ctx.trajectory.log("format_error", reason="no_tool_call", message=text)
            return False, True
        faulty = False
        submitted = False
        # a toolbox that logs its calls to this trajectory already records each result (output included);
        # logging it twice would cost a second fsynced write per call
        toolbox_logs = getattr(ctx.toolbox, "trajectory", None) is ctx.trajectory
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
