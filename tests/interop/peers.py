"""The peer tools' virtualenvs made by .ci/peers.sh (SDEBENCH_PEERS, default /opt/sdebench-peers).

A test that needs a missing peer is skipped, or fails when SDEBENCH_REQUIRE_PEERS is set (CI).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests import tiers
from tests.env.helpers import ROOT

PEERS = Path(os.environ.get("SDEBENCH_PEERS", "/opt/sdebench-peers"))
DOCKER_CONFIG = PEERS / "docker"
IMAGE = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")


def _missing(message: str) -> None:
    message += " (run .ci/peers.sh)"
    if os.environ.get("SDEBENCH_REQUIRE_PEERS"):
        pytest.fail(message)
    pytest.skip(message)


def bin_dir(name: str) -> Path:
    """The bin dir of peer venv `name`."""
    d = PEERS / name / "bin"
    if not (d / "python").exists():
        _missing(f"peer venv {name!r} not found under {PEERS}")
    return d


def docker_image() -> str:
    """The local test image (no registry is reachable), or skip/fail."""
    from sdebench.sandbox.docker import unavailable_reason

    tiers.skip_unless("docker")
    reason = unavailable_reason(IMAGE)
    if reason:
        message = f"docker unavailable: {reason} (run .ci/docker-setup.sh)"
        if os.environ.get("SDEBENCH_REQUIRE_DOCKER"):
            pytest.fail(message)
        pytest.skip(message)
    return IMAGE


def run(argv: list[str], cwd: Path, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    """Run a peer's command with the checkout on PYTHONPATH and the peers' Docker plugins."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_CONFIG": str(DOCKER_CONFIG), **env}
    return subprocess.run(argv, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)
