"""A test agent: the oracle, slowed down, logging each episode it starts (for claim and kill tests)."""

from __future__ import annotations

import os
import time

from sdebench.agents.reference import OracleAgent

LOG_ENV, SLEEP_ENV = "SDEBENCH_TEST_AGENT_LOG", "SDEBENCH_TEST_AGENT_SLEEP"


class SlowOracle(OracleAgent):
    """Sleeps `$SDEBENCH_TEST_AGENT_SLEEP` seconds, then applies the oracle patch; logs `pid` per start."""

    name = "slow-oracle"

    def start(self, ctx) -> None:
        """Log this process's pid and the episode's statement hash to `$SDEBENCH_TEST_AGENT_LOG`."""
        super().start(ctx)
        path = os.environ.get(LOG_ENV)
        if path:
            with open(path, "a") as f:
                f.write(f"{os.getpid()} {hash(ctx.statement) & 0xffff}\n")

    def run(self):
        """Sleep, then act like the oracle."""
        time.sleep(float(os.environ.get(SLEEP_ENV, "0.3")))
        return super().run()
