import os

import pytest

from sdebench.sandbox.docker import unavailable_reason

TEST_IMAGE = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")


@pytest.fixture(scope="session")
def docker_image():
    """The docker test image; skips (with the reason) when no engine or image is reachable."""
    reason = unavailable_reason(TEST_IMAGE)
    if reason:
        pytest.skip(f"docker backend unavailable: {reason} (run .ci/docker-setup.sh)")
    return TEST_IMAGE
