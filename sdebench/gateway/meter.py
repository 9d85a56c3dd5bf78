"""Per-episode metering of the gateway: limits checked before a call, accounting after it.

The accounting is `sdebench.agents.accounting`'s, the same as the built-in agent's; the totals are a
`Usage`, so an installed agent's record reads exactly like the built-in agent's. The cost limit is
checked against the worst case of the call about to be made (its prompt estimated from its size,
its completion at the output cap): a call that could cross `max_cost_usd` is refused, not paid.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sdebench.agents.accounting import (
    CallAccount,
    Prices,
    Pricing,
    account_call,
    add_call,
    known_prices,
    worst_case_usd,
)
from sdebench.agents.base import Limits, Usage
from sdebench.errors import AgentError

STOP_MAX_COST = "max_cost"
STOP_MAX_CALLS = "max_turns"  # an answered model call is an installed agent's turn (a failed one is not)
STOP_MAX_WALL = "max_wall"


class LimitReached(AgentError):
    """A call refused because it could cross a limit of the episode."""

    def __init__(self, stop_reason: str, message: str):
        super().__init__(message)
        self.stop_reason = stop_reason


@dataclass
class Ticket:
    """A call admitted by the meter, with the cost held for it until it is accounted."""

    n: int
    reserved_usd: float
    settled: bool = False  # its hold released (accounted or failed): releasing twice would free another call's hold


class Meter:
    """Admits, accounts and totals the model calls of one episode; thread-safe."""

    def __init__(self, pricing: Pricing, limits: Limits, started_at: float):
        self.pricing = pricing
        self.limits = limits
        self.started_at = started_at
        self.usage = Usage()
        self.tool_calls: Counter[str] = Counter()  # tools the model called (the agent's own tools)
        self.stop_reason: str | None = None  # the first limit that refused a call
        self.refused = 0
        self._lock = threading.Lock()
        self._admitted = 0  # calls admitted so far (numbers them)
        self._in_flight = 0  # admitted calls not yet answered or failed
        self._reserved = 0.0
        self._prices: Prices | None = known_prices(pricing)

    def worst_case_usd(self, prompt_chars: int, max_tokens: int) -> float:
        """The most a call with this prompt size and output cap could cost."""
        return worst_case_usd(self._prices, prompt_chars, max_tokens)

    def admit(self, prompt_chars: int, max_tokens: int) -> Ticket:
        """Admit one call or raise LimitReached (the call is then not made)."""
        worst = self.worst_case_usd(prompt_chars, max_tokens)
        with self._lock:
            stop, why = self._check(worst)
            if stop is not None:
                self.refused += 1
                self.stop_reason = self.stop_reason or stop
                raise LimitReached(stop, why)
            self._admitted += 1
            self._in_flight += 1
            self._reserved += worst
            return Ticket(self._admitted, worst)

    def _check(self, worst: float) -> tuple[str | None, str]:
        lim = self.limits
        # answered calls are turns; calls in flight may become ones; failed calls are not (a model
        # that keeps failing must not use up the agent's turns)
        if self.usage.model_calls + self._in_flight >= lim.max_turns:
            return STOP_MAX_CALLS, f"the episode's model-call limit ({lim.max_turns}) is reached"
        if time.monotonic() - self.started_at >= lim.max_wall_s:
            return STOP_MAX_WALL, f"the episode's wall-time limit ({lim.max_wall_s:g} s) is reached"
        committed = self.usage.cost_usd + self._reserved
        if committed + worst > lim.max_cost_usd:
            return STOP_MAX_COST, (
                f"the episode's cost limit (${lim.max_cost_usd:g}) could be crossed by this call "
                f"(spent ${self.usage.cost_usd:.4f}, this call up to ${worst:.4f})"
            )
        return None, ""

    def account(self, ticket: Ticket, response: Any, latency_s: float) -> CallAccount:
        """Account a reply of an admitted call (same rules as the built-in agent) and release its hold
        (a reply that cannot be priced raises PricingError and leaves the ticket to `release`)."""
        acc = account_call(self.pricing, response, latency_s)
        with self._lock:
            # settled and counted at once: a concurrent admit never sees the call as neither
            self._settle_locked(ticket)
            add_call(self.usage, acc)
        return acc

    def release(self, ticket: Ticket, latency_s: float = 0.0) -> None:
        """Release the hold of an admitted call that failed (nothing to pay); a no-op once settled."""
        if self._settle(ticket):
            with self._lock:
                self.usage.model_s += latency_s

    def _settle(self, ticket: Ticket) -> bool:
        with self._lock:
            return self._settle_locked(ticket)

    def _settle_locked(self, ticket: Ticket) -> bool:
        if ticket.settled:
            return False
        ticket.settled = True
        self._in_flight -= 1
        self._reserved = max(self._reserved - ticket.reserved_usd, 0.0)
        return True

    def count_tools(self, names: list[str]) -> None:
        """Count the tools a reply called."""
        with self._lock:
            self.tool_calls.update(names)

    def wall_left(self) -> float:
        """Seconds left of the episode's wall budget."""
        return self.limits.max_wall_s - (time.monotonic() - self.started_at)
