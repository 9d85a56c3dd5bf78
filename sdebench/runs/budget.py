"""The sweep budget (`budget_usd`): a ledger every job of one sweep shares, parallel ones included.

The ledger is a JSON file in `results_dir` (`.budget/<sweep id>.json`), read and written only
under an exclusive `flock` on a lock file beside it, or with `claims=lease` while holding a lease
file beside it (sdebench.runs.lease: the same staleness rule as the episodes' claims, so a job
killed inside the few milliseconds of an update blocks the ledger for at most `claim_lease_s`). Before an episode that calls a model starts,
its worst case (the per-episode cap `limits.max_cost_usd`, which the agents never cross) is
reserved; a reservation that would take spent + reserved past the budget is refused and the
episode is not started. After the episode the reservation is replaced by its actual cost. So the
budget is never exceeded, whatever runs in parallel. A process killed mid-episode leaves its
reservation in place (counted as spent): the ledger errs on the safe side.

The sweep id is set by the command-line wrapper (`SDEBENCH_SWEEP_ID`, inherited by the sweep's
worker processes); a new command is a new sweep with a fresh budget.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdebench.errors import RunError
from sdebench.runs import lease
from sdebench.runs.config import section
from sdebench.runs.schema import RunConfig

SWEEP_ID_ENV = "SDEBENCH_SWEEP_ID"
EPS = 1e-9  # float slack when comparing sums of costs


class BudgetSpent(RunError):
    """An episode's reservation would exceed the sweep budget; the message is one line."""


@dataclass(frozen=True)
class Ledger:
    """One sweep's budget ledger."""

    path: Path
    budget_usd: float
    lease_s: float | None = None  # None: the lock is an flock; else a lease with this staleness limit

    @classmethod
    def for_run(cls, conf: RunConfig) -> Ledger | None:
        """The ledger of `conf`'s sweep, or None when `budget_usd` is null."""
        budget = conf.budget_usd
        if budget is None:
            return None
        if budget < 0:
            raise ValueError(f"budget_usd must not be negative, got {budget!r}")
        sweep_id = os.environ.get(SWEEP_ID_ENV) or f"pid{os.getpid()}"  # outside the wrapper: this process
        results_dir = Path(conf.results_dir or "results")

        mode = lease.ClaimMode.of(conf.claims, conf.claim_lease_s)
        return cls(results_dir / ".budget" / f"{sweep_id}.json", budget,
                   mode.lease_s if mode.kind == "lease" else None)

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.lease_s is not None:
            with lease.held(self.path.with_suffix(".lease"), self.lease_s):
                yield
            return
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with self._exclusive():
            try:
                state = json.loads(self.path.read_text())
            except (OSError, ValueError):
                state = {"budget_usd": self.budget_usd, "spent_usd": 0.0, "episodes": 0, "reserved": {}}
            yield state
            # threads of one process may hold the lock in turn: the temp name is unique to the writer
            tmp = self.path.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
            os.replace(tmp, self.path)

    def reserve(self, amount: float, what: str) -> str:
        """Reserve `amount` USD for the episode `what`; its token, or BudgetSpent if the budget would be exceeded."""
        with self._locked() as state:
            held = state["spent_usd"] + sum(r["usd"] for r in state["reserved"].values())
            if held + amount > self.budget_usd + EPS:
                raise BudgetSpent(f"{what}: its worst case ${amount:.2f} would take the sweep past budget_usd="
                                  f"{self.budget_usd:g} (${state['spent_usd']:.2f} spent, "
                                  f"${held - state['spent_usd']:.2f} reserved by running episodes)")
            token = uuid.uuid4().hex
            state["reserved"][token] = {"usd": amount, "what": what, "pid": os.getpid()}
            return token

    def settle(self, token: str, actual_usd: float) -> None:
        """Replace the reservation `token` by the episode's actual cost."""
        with self._locked() as state:
            state["reserved"].pop(token, None)
            state["spent_usd"] += float(actual_usd)
            state["episodes"] += 1

    def state(self) -> dict[str, Any]:
        """The ledger as it stands (spent, reserved, episodes)."""
        with self._locked() as state:
            return json.loads(json.dumps(state))


def new_sweep_id() -> str:
    """A fresh sweep id (time and pid), for the wrapper to put in SDEBENCH_SWEEP_ID."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def episode_worst_case(conf: RunConfig) -> float:
    """What one episode of `conf` may cost at most: its cap `limits.max_cost_usd`, or 0 for agents without a model."""
    if section(conf.model).get("name", "none") == "none":
        return 0.0
    return float(conf.limits.max_cost_usd)
