"""The Harbor export against the real `harbor` (Python 3.12 venv): `harbor lint` is clean, and trials
through Harbor's own runner in the local Docker engine give the oracle 1.0 and a no-op agent 0.0."""

from __future__ import annotations

import json
import tomllib

import pytest

from sdebench.interop import harbor
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load
from tests.interop import peers

pytestmark = [pytest.mark.peers, pytest.mark.docker, pytest.mark.slow]
TASK = "billing-rounding-v0-K"


@pytest.fixture(scope="module")
def exported(tasks_dir, tmp_path_factory):
    image = peers.docker_image()
    return harbor.export_task(load(tasks_dir / TASK), tmp_path_factory.mktemp("harbor"),
                              make_factory({"backend": "unsafe_local"}), base_image=image)


def test_harbor_parses_and_lints_the_export_clean(exported, tmp_path):
    bin_dir = peers.bin_dir("harbor")
    p = peers.run([str(bin_dir / "harbor"), "lint", str(exported)], tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "", p.stdout + p.stderr
    code = ("import sys; from harbor.models.task.config import TaskConfig; "
            "c = TaskConfig.model_validate_toml(open(sys.argv[1]).read()); "
            "print(c.task.name, c.schema_version, c.verifier.environment_mode.value)")
    p = peers.run([str(bin_dir / "python"), "-c", code, str(exported / "task.toml")], tmp_path)
    doc = tomllib.loads((exported / "task.toml").read_text())
    assert p.stdout.split() == [f"sdebench/{TASK}", doc["schema_version"], "separate"], p.stdout + p.stderr


def trial(exported, tmp_path, agent: str) -> dict:
    bin_dir = peers.bin_dir("harbor")
    # The engine here has no bridge network, which BuildKit needs for RUN steps: the classic builder.
    p = peers.run([str(bin_dir / "harbor"), "trial", "start", "-p", str(exported), "-a", agent,
                   "--trials-dir", str(tmp_path / "trials")], tmp_path, timeout=900, DOCKER_BUILDKIT="0")
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    (result,) = (tmp_path / "trials").glob("*/result.json")
    data = json.loads(result.read_text())
    assert data["exception_info"] is None, data["exception_info"]
    return data


def test_oracle_trial_gets_reward_one(exported, tmp_path):
    data = trial(exported, tmp_path, "oracle")
    assert data["verifier_result"]["rewards"] == {"reward": 1, "pass_ratio": 1.0}
    assert data["verifier_environment_mode"] == "separate"


def test_noop_trial_gets_reward_zero(exported, tmp_path):
    data = trial(exported, tmp_path, "nop")
    assert data["verifier_result"]["rewards"] == {"reward": 0, "pass_ratio": 0.0}
    details = json.loads(next((tmp_path / "trials").glob("*/verifier/details.json")).read_text())
    assert details["guard"].startswith("unchanged")
