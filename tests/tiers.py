"""Which heavy test tiers run. The README's test command runs the quick tier alone; `.ci/run` sets
SDEBENCH_TIERS=all after installing what the heavy tiers need.

    SDEBENCH_TIERS   a comma list of heavy tiers to run (slow, docker, agents, peers, slurm, memory), or `all`

An explicit `-m` expression selects by markers itself and turns this off.
"""

from __future__ import annotations

import os

import pytest

HEAVY = ("slow", "docker", "agents", "peers", "slurm", "memory")


def enabled() -> frozenset[str]:
    """The heavy tiers this run turns on (SDEBENCH_TIERS); a name that is no tier is an error."""
    raw = [t.strip() for t in os.environ.get("SDEBENCH_TIERS", "").split(",") if t.strip()]
    if "all" in raw:
        return frozenset(HEAVY)
    unknown = sorted(set(raw) - set(HEAVY))
    if unknown:
        raise pytest.UsageError(f"SDEBENCH_TIERS: unknown tier(s) {', '.join(unknown)} (known: {', '.join(HEAVY)}, all)")
    return frozenset(raw)


def reason(tier: str) -> str:
    """Why a test of `tier` did not run."""
    return f"heavy tier {tier!r} is off: SDEBENCH_TIERS={tier} (or all) runs it, as .ci/run does"


def skip_unless(tier: str) -> None:
    """Skip the calling test unless `tier` is on."""
    if tier not in enabled():
        pytest.skip(reason(tier))
