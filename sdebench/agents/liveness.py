"""Whether a failed model call is the model's (the infrastructure's) or the agent's, and whether the
model is dead: the rule both the built-in agent and the gateway of the installed agents apply.

An episode in which the model failed every call since some point is an error (no outcome; it may
be rerun). "Failed" is decided per call by where the failure comes from (`cause_of`):

- `infrastructure`: no answer (connection refused, reset, timeout), a 5xx, a rate limit, or the
  entry's key or model refused (401, 403, 404): nothing the agent sent explains it;
- `request`: any other 4xx: the model refused this request (too long, malformed), which may be
  the agent's own doing;
- `config`: a reply that cannot be priced under strict cost tracking (the run's set-up).

A streak of failed calls since the model last answered (`Streak`) makes the model a suspect only
if its last failure is the infrastructure's; the suspicion is then checked by a call of the
harness's own that the agent cannot shape (`probe`: one fixed 1-token request, the pre-flight's):
the model is dead only if that fails too for an infrastructure cause. So an agent cannot turn a
miss into "no outcome" by sending one request its model (or the gateway) chokes on and then
crashing: a model that still answers the probe was alive, and the failure is the agent's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdebench.agents.model import ModelSettings

# The text of the harness's own 1-token call (pre-flight and liveness probes); the test model server
# answers it without using up its script.
PROBE_TEXT = "sdebench preflight: reply with one token."
PROBE_TIMEOUT_S = 20.0

INFRASTRUCTURE = "infrastructure"
REQUEST = "request"
CONFIG = "config"


def cause_of(status: int | None) -> str:
    """Who a failed call with HTTP `status` (None: no answer) is blamed on: `infrastructure` for no
    answer, 5xx, 408, 429 and the entry's key or model refused (401, 403, 404); `request` otherwise."""
    if status is None or status >= 500 or status in (401, 403, 404, 408, 429):
        return INFRASTRUCTURE
    return REQUEST


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an exception from a model call carries, or None (no answer)."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) and 100 <= code <= 599 else None


@dataclass
class Streak:
    """The model calls that failed since the model last answered one (thread-safety is the owner's)."""

    failed: int = 0
    cause: str | None = None  # the last failure's cause
    since: float | None = None  # time.monotonic() of the streak's first failure
    last_error: str | None = None

    def answered(self) -> None:
        """The model answered a call: the streak ends."""
        self.failed, self.cause, self.since, self.last_error = 0, None, None, None

    def fail(self, cause: str, error: str) -> None:
        """One more call failed, for `cause`."""
        if self.failed == 0:
            self.since = time.monotonic()
        self.failed += 1
        self.cause, self.last_error = cause, error

    @property
    def suspect(self) -> bool:
        """Whether the model may be dead: calls failed since its last answer, the last one not the request's."""
        return self.failed > 0 and self.cause != REQUEST

    def age_s(self) -> float:
        """Seconds since the streak's first failure (0 without one)."""
        return 0.0 if self.since is None else time.monotonic() - self.since


@dataclass(frozen=True)
class Probe:
    """The outcome of one probe of the model."""

    alive: bool
    status: int | None = None
    error: str | None = None
    latency_s: float = 0.0


def ping(model: ModelSettings, timeout_s: float = PROBE_TIMEOUT_S) -> float:
    """One `max_tokens=1` call of PROBE_TEXT to `model` (litellm, no retries); its latency, or the exception."""
    from sdebench.agents.accounting import import_litellm

    key = model.api_key()
    litellm = import_litellm()
    kwargs: dict[str, Any] = {**model.extra, "model": model.litellm_model,
                              "messages": [{"role": "user", "content": PROBE_TEXT}],
                              "max_tokens": 1, "timeout": timeout_s, "max_retries": 0, "num_retries": 0}
    if model.api_base:
        kwargs["api_base"] = model.api_base
    if key is not None:
        kwargs["api_key"] = key
    t0 = time.monotonic()
    litellm.completion(**kwargs)
    return time.monotonic() - t0


def probe(model: ModelSettings, timeout_s: float = PROBE_TIMEOUT_S) -> Probe:
    """Whether `model` answers the harness's own call: dead only for a failure of the infrastructure's
    (an answer refusing the probe, e.g. a 400, still shows a model that answers)."""
    t0 = time.monotonic()
    try:
        latency = ping(model, timeout_s)
    except Exception as e:  # noqa: BLE001 - any failure is classified, never raised
        status = status_of(e)
        text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        return Probe(cause_of(status) != INFRASTRUCTURE, status, f"{type(e).__name__}: {text}",
                     time.monotonic() - t0)
    return Probe(True, 200, None, latency)


def dead_model(streak: Streak, check: Callable[[], Probe], log: Callable[..., None] | None = None) -> str | None:
    """Why the model is dead (it failed every call since some point and fails the probe too), or None.

    `check` probes the model; it is called only when the streak makes the model a suspect (a
    `config` failure needs no probe: the set-up is broken whatever the model does)."""
    if not streak.suspect:
        return None
    if streak.cause == CONFIG:
        return f"the model's replies cannot be used: {streak.last_error}"
    result = check()
    if log is not None:
        log("model_probe", alive=result.alive, status=result.status, error=result.error,
            latency_s=round(result.latency_s, 4), failed_calls=streak.failed)
    if result.alive:
        return None
    return (f"the model failed every call since some point ({streak.failed} in a row over {streak.age_s():.0f} s, "
            f"the last: {streak.last_error}) and a probe of its own failed too ({result.error})")
