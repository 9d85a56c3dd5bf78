"""Pre-flight: what a run checks once, before its first episode, so a broken set-up fails in seconds
with one line instead of once per episode.

- **Config completeness.** An agent that talks to a model (the LLM agent, every installed agent)
  with `model=none` is refused.
- **The model endpoint** answers one call of `max_tokens=1` (through litellm, as the agents reach
  it, no retries, `preflight.timeout_s`); skip it with `preflight.model=false` (e.g. a provider
  that bills a minimum per request).
- **The sandbox** runs `echo ok` in an empty workspace; skip it with `preflight.sandbox=false`.

Each failure is a `PreflightError` whose message is one line.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

# The text of the pre-flight call (the liveness probe's too); the test model server answers it
# without using up its script.
from sdebench.agents.liveness import PROBE_TEXT
from sdebench.errors import RunError
from sdebench.runs.config import section
from sdebench.runs.schema import RunConfig

__all__ = ["PROBE_TEXT", "PreflightError", "check_config", "needs_model", "probe_model", "probe_sandbox", "run"]
DEFAULT_TIMEOUT_S = 20.0


class PreflightError(RunError):
    """A pre-flight check failed; the message is one line."""




def needs_model(agent_cls: Any) -> bool:
    """Whether agents of `agent_cls` call a model (LLM and installed agents do; reference agents do not);
    PreflightError if the class declares no capabilities."""
    from sdebench.agents.base import CapabilityError, capabilities_of

    try:
        return capabilities_of(agent_cls).uses_model
    except CapabilityError as e:
        raise PreflightError(str(e)) from None


def check_config(conf: RunConfig, agent_cls: Any) -> None:
    """Refuse an agent that calls a model when no model is chosen."""
    agent = section(conf.agent).get("name")
    if needs_model(agent_cls) and section(conf.model).get("name", "none") == "none":
        raise PreflightError(f"agent {agent} calls a model: choose one with model=NAME (the files of conf/model/)")


def probe_model(model_cfg: dict[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S) -> float:
    """One `max_tokens=1` call to the model `model_cfg` names; its latency in seconds, or PreflightError."""
    from sdebench.agents.liveness import ping
    from sdebench.agents.model import ConfigError, ModelSettings

    try:
        m = ModelSettings.from_config(model_cfg)
        key = m.api_key()
    except ConfigError as e:
        raise PreflightError(str(e)) from None
    try:
        return ping(m, timeout_s)
    except Exception as e:  # noqa: BLE001 - any failure of the endpoint is the one line
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        if key:
            text = text.replace(key, "[REDACTED]")
        where = m.api_base or m.litellm_model
        raise PreflightError(f"model {m.name} at {where} did not answer a 1-token call: {type(e).__name__}: {text[:300]} "
                             "(check the server and key, or skip this check with preflight.model=false)") from None


def probe_sandbox(factory: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Run `echo ok` in an empty workspace of `factory`'s sandbox, or PreflightError."""
    with tempfile.TemporaryDirectory(prefix="sdebench-preflight-") as d:
        ws = Path(d) / "ws"
        ws.mkdir()
        try:
            with factory.open(ws) as box:
                res = box.exec("echo ok", timeout=timeout_s)
        except Exception as e:  # noqa: BLE001 - a sandbox that cannot start is the one line
            raise PreflightError(f"sandbox {factory.name} cannot run a command: {type(e).__name__}: "
                                 f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:400]) from None
    if res.exit_code != 0 or res.stdout.strip() != "ok":
        detail = (res.stderr or res.stdout).strip().splitlines()
        raise PreflightError(f"sandbox {factory.name}: `echo ok` exited {res.exit_code}"
                             + (f": {detail[0][:300]}" if detail else "")
                             + (" (timed out)" if res.timed_out else ""))


def run(conf: RunConfig, factory: Any) -> None:
    """The model and sandbox checks `conf.preflight` enables (the config check runs at start-up)."""
    opts = conf.preflight
    if opts.model and section(conf.model).get("name", "none") != "none":
        probe_model(section(conf.model), opts.timeout_s)
    if opts.sandbox:
        probe_sandbox(factory, opts.timeout_s)
