import os

import pytest

from sdebench.sandbox.docker import unavailable_reason
from tests import tiers

TEST_IMAGE = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")


@pytest.fixture(scope="session")
def docker_image():
    """The docker test image; skips with the reason when no engine or image is reachable
    (fails instead when SDEBENCH_REQUIRE_DOCKER is set, as in CI)."""
    tiers.skip_unless("docker")
    reason = unavailable_reason(TEST_IMAGE)
    if reason:
        message = f"docker backend unavailable: {reason} (run .ci/docker-setup.sh)"
        if os.environ.get("SDEBENCH_REQUIRE_DOCKER"):
            pytest.fail(message)
        pytest.skip(message)
    return TEST_IMAGE
