"""An in-process model client for unit tests of the LLM agent's loop (sdebench.agents.llm).

`ScriptedClient` implements `sdebench.agents.model.ModelClient` from a script in the format of
the test model server (sdebench.testing.testmodel: tool calls, text, garbled arguments, errors,
usage, `repeat`, `at`), answering each call with the reply the server would send, without HTTP or
litellm. Replies are priced at configured per-million prices with the same accounting as the real
client. An `error` step is a failed call that ends the run (`Completion.error`, blamed as
sdebench.agents.liveness.cause_of says); an `outage` step fails that call and every later one, and
the probe too (a `dead` outage as no answer at all). Retries, request building and litellm's own
pricing belong to `LiteLLMClient` and are tested against the HTTP server.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from sdebench.agents.accounting import CallAccount, Prices, price_tokens, raw_usage, token_counts
from sdebench.agents.liveness import INFRASTRUCTURE, REQUEST, Probe, cause_of
from sdebench.agents.model import Completion, Log, ModelReply, assistant_message
from sdebench.testing.testmodel import Script, ScriptedModel, completion_body, parse_script

PRICES = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}  # as conf/model/testmodel.yaml


class ScriptedClient:
    """Answers from a script in this process; `requests` records what each call was given."""

    def __init__(self, script: Script | list[dict[str, Any]] | dict[str, Any], prices: dict[str, float] | None = None,
                 name: str = "scripted", secret: str | None = None):
        self.model = ScriptedModel(script if isinstance(script, Script) else parse_script(script))
        self.prices = Prices.from_config(prices or PRICES)
        self.name = name
        self.secret = secret  # a value the agent must redact (stands for an API key)
        self.requests: list[dict[str, Any]] = []

    def describe(self) -> dict[str, Any]:
        """The scripted model's label and pricing."""
        return {"model": self.name, "litellm_model": None, "api_base": None, "pricing": "configured"}

    def secrets(self) -> tuple[str, ...]:
        """The planted secret, if any."""
        return (self.secret,) if self.secret else ()

    def worst_case_usd(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> float:
        """Nothing: a scripted reply is known, so the cost cap is checked only on what was spent."""
        return 0.0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int,
                 deadline: float, log: Log) -> Completion:
        """The next scripted reply to `messages`."""
        if deadline - time.monotonic() <= 0:
            return Completion(stop="max_wall")
        t0 = time.perf_counter()
        record = {"messages": copy.deepcopy(messages), "tools": copy.deepcopy(tools), "seed": seed}
        self.requests.append(record)
        n, step = self.model.next_step(record)
        if step is None:
            log("model_error", error=f"script exhausted: request {n} has no step", status=400, retryable=False)
            return Completion(error=f"BadRequestError: test model script exhausted: request {n} has no step",
                              cause=REQUEST)
        if step.kind in ("error", "outage"):
            status = step.status or None  # a dead server gives no answer at all
            log("model_error", error=step.message, status=status, retryable=False)
            return Completion(error=f"scripted error {status}: {step.message}", cause=cause_of(status))
        body = completion_body(self.model.script.model, n, step)
        choice = body["choices"][0]
        tokens = token_counts(body["usage"])
        latency = time.perf_counter() - t0
        account = CallAccount(
            prompt_tokens=tokens.prompt,
            completion_tokens=tokens.completion,
            cached_tokens=tokens.cached,
            cache_write_tokens=tokens.cache_write,
            cost_usd=price_tokens(self.prices, tokens),
            cost_source="configured",
            latency_s=latency,
            raw_usage=raw_usage(body["usage"]),
        )
        reply = ModelReply(assistant_message(choice["message"]), choice["finish_reason"], account)
        return Completion(reply=reply, replied=True)

    def probe(self) -> Probe:
        """The harness's own call: answered unless an outage is in force (then as the outage fails)."""
        outage = self.model.outage
        if outage is None:
            return Probe(True, 200)
        status = outage.status or None
        return Probe(cause_of(status) != INFRASTRUCTURE, status, f"scripted outage {status}")
