"""Fixtures of the hostile-patch suite: the sample task in a store dir, and one factory per backend."""

import shutil

import pytest

from sdebench.sandbox import make_factory
from sdebench.testing.sample_task import write_sample_task
from tests.sandbox.conftest import docker_image  # noqa: F401 - re-exported fixture

BACKENDS = ("local", "docker")


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A task store holding the sample task (masked from every sandbox)."""
    root = tmp_path_factory.mktemp("store")
    write_sample_task(root / "sample")
    return root


@pytest.fixture(scope="session")
def sample(store):
    from sdebench.tasks.record import load

    return load(store / "sample")


@pytest.fixture(scope="session", params=[pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else [pytest.mark.bwrap]) for b in BACKENDS])
def factory(request, store, tmp_path_factory):
    """A sandbox factory of each backend, with the task store and a results dir masked."""
    results = tmp_path_factory.mktemp("results")
    if request.param == "local":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
        f = make_factory({"backend": "local", "tasks_dir": str(store), "results_dir": str(results)})
    else:
        image = request.getfixturevalue("docker_image")
        f = make_factory({"backend": "docker", "image": image})
    yield f
    f.cleanup()
