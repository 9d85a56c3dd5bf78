"""The Dockerfile of exported tasks (Harbor and SWE-bench): the task's repo cloned from its bundle.

The base image is a parameter. It must run `python3`; git and pytest are installed (pytest
pinned) only when the base lacks them, so an image that already has both (a local one, as in CI
where no registry is reachable) builds without network.
"""

from __future__ import annotations

DEFAULT_BASE_IMAGE = "python:3.12-slim-bookworm"
PYTEST_REQUIREMENT = "pytest==8.3.5"
BUNDLE_NAME = "repo.bundle"


def dockerfile(base_image: str, workdir: str) -> str:
    """A Dockerfile that clones `repo.bundle` (beside it) into `workdir` with `main` checked out."""
    if not base_image or any(c.isspace() for c in base_image):
        raise ValueError(f"bad base image {base_image!r}")
    return (
        f"FROM {base_image}\n"
        "# git and pytest only when the base image lacks them (no network needed otherwise).\n"
        "RUN (command -v git >/dev/null && python3 -m pytest --version >/dev/null 2>&1) || \\\n"
        "    (apt-get update && apt-get install -y --no-install-recommends git \\\n"
        "     && rm -rf /var/lib/apt/lists/* \\\n"
        f"     && python3 -m pip install --no-cache-dir '{PYTEST_REQUIREMENT}')\n"
        f"COPY {BUNDLE_NAME} /tmp/{BUNDLE_NAME}\n"
        f"RUN git clone -q -b main /tmp/{BUNDLE_NAME} {workdir} && git -C {workdir} remote remove origin \\\n"
        f"    && rm -rf /tmp/{BUNDLE_NAME} {workdir}/.git/logs\n"
        f"WORKDIR {workdir}\n"
    )
