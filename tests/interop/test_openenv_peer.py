"""`python -m sdebench.serve` against the real `openenv-core`: its GenericEnvClient runs an episode
(reset/step/state over WebSocket), its runtime validator passes every criterion, and its local
validator accepts the repository as a deployable environment."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.env.helpers import serve
from tests.interop import peers

pytestmark = [pytest.mark.peers, pytest.mark.slow]
TASK = "billing-rounding-v0-K"

CLIENT = """
import json, sys
from openenv.core.generic_client import GenericEnvClient
url, task, patch = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
out = {}
with GenericEnvClient(base_url=url).sync() as env:
    r = env.reset(task_id=task)
    out["reset"] = {"done": r.done, "reward": r.reward, "obs": r.observation}
    out["state0"] = env.state()
    r = env.step({"patched_code": "def broken(:\\n", "path": "invoicer/money.py"})
    out["bad"] = {"done": r.done, "reward": r.reward, "info": r.observation["info"]}
    r = env.step({"patched_code": out["reset"]["obs"]["current_code"]["invoicer/money.py"], "path": "invoicer/money.py"})
    out["unchanged"] = {"reward": r.reward, "info": r.observation["info"]}
    r = env.step({"diff": patch})
    out["fix"] = {"done": r.done, "reward": r.reward, "obs": r.observation}
    out["state"] = env.state()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def url(tasks_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("oetasks")
    shutil.copytree(tasks_dir / TASK, root / TASK)
    with serve(root) as u:
        yield u


def test_openenv_validator_passes(url, tmp_path):
    p = peers.run([str(peers.bin_dir("openenv") / "openenv"), "validate", "--url", url], tmp_path, timeout=120)
    report = json.loads(p.stdout)
    assert p.returncode == 0 and report["passed"], report
    assert report["summary"]["passed_count"] == report["summary"]["total_count"] == 6
    assert report["mode"] == "simulation"


def test_generic_env_client_runs_an_episode(url, tasks_dir, tmp_path):
    (tmp_path / "client.py").write_text(CLIENT)
    p = peers.run([str(peers.bin_dir("openenv") / "python"), str(tmp_path / "client.py"), url, TASK,
                   str(tasks_dir / TASK / "oracle.patch")], tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    reset = out["reset"]
    assert reset["done"] is False and reset["obs"]["step_number"] == 0
    assert "task_id" not in reset["obs"] and TASK not in json.dumps(reset["obs"])  # nothing names the task
    assert out["state0"]["episode_id"] == reset["obs"]["episode_id"] and out["state0"]["step_count"] == 0
    assert out["bad"]["done"] is False and out["bad"]["info"]["is_valid_python"] is False
    # a step that is not valid Python scores no more than an unchanged one (both: the guards' 0)
    assert out["bad"]["reward"] == out["unchanged"]["reward"] == 0.0
    assert out["unchanged"]["info"]["guards"] == ["unchanged"]
    fix = out["fix"]
    assert fix["done"] is True and fix["reward"] == pytest.approx(0.9375) and fix["obs"]["info"]["all_tests_pass"]
    assert "test_hidden" not in json.dumps(fix["obs"])  # hidden tests only as counts
    assert out["state"]["step_count"] == 3 and out["state"]["task_id"] == TASK


def test_openenv_validate_accepts_the_repository(tmp_path):
    """`openenv validate .`: openenv.yaml, pyproject's `server` script and openenv-core dependency,
    uv.lock, server/app.py's main() and a Dockerfile: ready for every deployment mode."""
    p = peers.run([str(peers.bin_dir("openenv") / "openenv"), "validate", str(peers.ROOT), "--json", "--verbose"],
                  tmp_path, timeout=120)
    report = json.loads(p.stdout)
    assert p.returncode == 0 and report["passed"] and report["issues"] == [], report
    assert report["deployment_modes"] == {"docker": True, "openenv_serve": True, "uv_run": True, "python_module": True}
