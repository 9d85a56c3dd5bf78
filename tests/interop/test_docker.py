"""Exported verifiers run inside a real container, at the paths Harbor uses (/app, /tests, /logs/verifier)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sdebench.interop import bugsinpy as bp
from sdebench.interop import harbor
from sdebench.interop.bugsinpy_verifier import grade_bugsinpy
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from tests import tiers
from tests.interop import bugsinpy_fixture as fx

pytestmark = [pytest.mark.docker, pytest.mark.slow]
IMAGE = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")


@pytest.fixture(scope="module")
def client():
    """A docker client with the test image; skips (fails in CI) without an engine."""
    from sdebench.sandbox.docker import unavailable_reason

    tiers.skip_unless("docker")
    reason = unavailable_reason(IMAGE)
    if reason:
        message = f"docker unavailable: {reason} (run .ci/docker-setup.sh)"
        if os.environ.get("SDEBENCH_REQUIRE_DOCKER"):
            pytest.fail(message)
        pytest.skip(message)
    import docker

    c = docker.from_env(timeout=300)
    yield c
    c.close()


def run_verifier(client, tests: Path, app: Path, logs: Path, mode: str = "rw") -> str:
    """Run a fresh copy of tests/ (as Harbor uploads one per trial), tests/test.sh, in a fresh container
    without network, as root; return the reward (`mode`: how /tests is mounted)."""
    logs.mkdir(parents=True, exist_ok=True)
    fresh = logs.parent / f"tests-{logs.name}"
    shutil.copytree(tests, fresh)
    client.containers.run(
        IMAGE,
        ["bash", "/tests/test.sh"],
        volumes={str(fresh): {"bind": "/tests", "mode": mode}, str(app): {"bind": "/app", "mode": "rw"},
                 str(logs): {"bind": "/logs/verifier", "mode": "rw"}},
        network_mode="none",
        remove=True,
    )
    reward = logs / "reward.json"  # our exports (Harbor's current schema)
    if reward.is_file():
        return str(json.loads(reward.read_text())["reward"])
    return (logs / "reward.txt").read_text().strip()  # BugsInPy-v2's own verifier


def test_harbor_verifier_in_a_container(client, tasks_dir, tmp_path):
    task = load(tasks_dir / "billing-rounding-v0-K")
    dest = harbor.export_task(task, tmp_path / "harbor", make_factory({"backend": "unsafe_local"}))
    repo_mod._git(tmp_path, "clone", "-q", "-b", "main", str(dest / "environment" / "repo.bundle"), "app")
    app = tmp_path / "app"  # what the exported Dockerfile builds
    assert run_verifier(client, dest / "tests", app, tmp_path / "l1") == "0"
    repo_mod.apply_patch(app, task.oracle_patch)
    assert run_verifier(client, dest / "tests", app, tmp_path / "l2") == "1"
    details = json.loads((tmp_path / "l2" / "details.json").read_text())
    assert details["runs_as"] == "a fresh unprivileged user per phase"
    assert sorted(p.name for p in (tmp_path / "tests-l2").iterdir()) == [
        "_runner.py", "artifacts.py", "pristine", "records.py", "rules.py", "test.sh", "verify.py"]  # the key is gone
    # A read-only /tests: the key cannot be removed and stays readable, so the verifier fails closed.
    assert run_verifier(client, dest / "tests", app, tmp_path / "l3", mode="ro") == "0"
    error = json.loads((tmp_path / "l3" / "details.json").read_text())["error"]
    assert error.startswith("fails closed: the answer key could not be removed and stays readable: /tests/")


UIDS = """import os
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            print(open(f"/proc/{p}/status").read().split("Uid:")[1].split()[0])
        except (OSError, IndexError):
            pass
"""


@pytest.mark.parametrize("attack", ["LINGER", "FORGE"])
def test_hostile_submissions_in_a_container(client, tasks_dir, tmp_path, attack):
    """The lingering reader and the forger of tests/interop/test_harbor_hostile.py in the verifier's own
    container: the key is out of reach, forged records are not outcomes, and once the verifier returns
    no process of its users is left in the container."""
    from sdebench.interop import harbor_verify
    from tests.interop import test_harbor_hostile as hostile

    task = load(tasks_dir / "billing-rounding-v0-K")
    dest = harbor.export_task(task, tmp_path / "harbor", make_factory({"backend": "unsafe_local"}))
    repo_mod._git(tmp_path, "clone", "-q", "-b", "main", str(dest / "environment" / "repo.bundle"), "app")
    app, drop, logs = tmp_path / "app", tmp_path / "drop", tmp_path / "logs"
    if attack == "LINGER":
        repo_mod.apply_patch(app, task.oracle_patch)
    drop.mkdir(mode=0o1777)
    drop.chmod(0o1777)
    logs.mkdir()
    hostile.append(app, getattr(hostile, attack).format(drop="/drop"))
    shutil.copytree(dest / "tests", tmp_path / "tests")
    (drop / "uids.py").write_text(UIDS)
    script = "bash /tests/test.sh; sleep 1; python3 /drop/uids.py > /drop/uids-after"
    client.containers.run(
        IMAGE, ["bash", "-c", script],
        volumes={str(tmp_path / "tests"): {"bind": "/tests", "mode": "rw"}, str(app): {"bind": "/app", "mode": "rw"},
                 str(logs): {"bind": "/logs/verifier", "mode": "rw"}, str(drop): {"bind": "/drop", "mode": "rw"}},
        network_mode="none", remove=True)
    details = json.loads((logs / "details.json").read_text())
    assert list(drop.glob("pid-*")), "the attack never ran"
    assert not list(drop.glob("got-*"))
    survivors = [int(u) for u in (drop / "uids-after").read_text().split() if int(u) >= harbor_verify.UID_BASE]
    assert survivors == []
    if attack == "LINGER":
        assert json.loads((logs / "reward.json").read_text())["reward"] == 1
    else:
        assert details["tampering"] and details["counts"]["FAIL_TO_PASS"]["passed"] == 0


@pytest.fixture(scope="module")
def bare_tasks(tmp_path_factory):
    """The fixture tasks imported, then stripped of their originals but the test file: export writes our test.sh."""
    root = tmp_path_factory.mktemp("bare")
    bp.import_parquet(fx.write_parquet(root / "t.parquet", fx.good_rows()), root / "tasks")
    for d in (root / "tasks").iterdir():
        test = (d / bp.ORIGINALS / bp.SRC_TEST).read_bytes()
        shutil.rmtree(d / bp.ORIGINALS)
        (d / bp.ORIGINALS / bp.SRC_TEST).parent.mkdir(parents=True)
        (d / bp.ORIGINALS / bp.SRC_TEST).write_bytes(test)
    return root / "tasks"


CASES = [
    ("bugsinpy-0001", "", 0),
    ("bugsinpy-0001", None, 0),
    ("bugsinpy-0001", fx.FIXED_ADD + "\nimport no_such_module_here\n", 0),
    ("bugsinpy-0001", fx.BUGGY_ADD.replace("a - b", "a * b"), 0),
    ("bugsinpy-0001", fx.FIXED_ADD, 1),
    ("bugsinpy-0001", "def add(a, b):\n    return a + b\n", 0),  # breaks collection of a good file
    ("bugsinpy-0002", fx.FIXED_IMPORT, 1),
    ("bugsinpy-0003", fx.FIXED_ADD, 1),  # uncollectable file: the basic check decides
    ("bugsinpy-0003", "", 0),
]


@pytest.mark.parametrize(("task_id", "solution", "reward"), CASES)
def test_exported_bugsinpy_test_sh_agrees_with_the_verifier(client, bare_tasks, tmp_path, task_id, solution, reward):
    task = load(bare_tasks / task_id)
    files = bp.export_files(task)
    for rel, data in files.items():
        (tmp_path / "task" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "task" / rel).write_bytes(data)
    app = tmp_path / "app"  # what the exported Dockerfile bakes
    app.mkdir()
    (app / ".buggy_solution.py").write_bytes(files["environment/solution.py"])
    if solution is not None:
        (app / "solution.py").write_bytes(files["environment/solution.py"] if solution == "" else solution.encode())
    assert run_verifier(client, tmp_path / "task" / "tests", app, tmp_path / "logs") == str(reward)
    ws = repo_mod.unbundle(task.bundle, tmp_path / "ws")
    if solution is None:
        (ws / "solution.py").unlink()
    elif solution:
        (ws / "solution.py").write_text(solution)
    assert grade_bugsinpy(task, ws, make_factory({"backend": "unsafe_local"})).reward["binary"] == reward
