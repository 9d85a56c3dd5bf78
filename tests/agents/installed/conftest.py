import os

import pytest

from sdebench.sandbox.docker import unavailable_reason
from sdebench.testing import testmodel
from tests import tiers

TEST_IMAGE = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")


@pytest.fixture(scope="session")
def docker_image():
    """The docker test image; skips when no engine or image is reachable (fails under SDEBENCH_REQUIRE_DOCKER)."""
    tiers.skip_unless("docker")
    reason = unavailable_reason(TEST_IMAGE)
    if reason:
        message = f"docker backend unavailable: {reason} (run .ci/docker-setup.sh)"
        if os.environ.get("SDEBENCH_REQUIRE_DOCKER"):
            pytest.fail(message)
        pytest.skip(message)
    return TEST_IMAGE


@pytest.fixture(scope="module")
def server():
    """The scripted test model, one per test module (each test posts its own script)."""
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        yield srv
