"""Harbor export: the exported verifier is run for real (on the host, paths redirected)."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from sdebench.interop import bugsinpy as bp
from sdebench.interop import container, harbor
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from tests.interop import bugsinpy_fixture as fx
from tests.interop import verifier_run

OURS = "billing-rounding-v0-K"


@pytest.fixture(scope="module")
def exported(tasks_dir, tmp_path_factory) -> Path:
    return harbor.export_task(load(tasks_dir / OURS), tmp_path_factory.mktemp("harbor"),
                              make_factory({"backend": "unsafe_local"}))


def checkout(exported: Path, dest: Path) -> Path:
    """What the Dockerfile builds: /app cloned from the bundle."""
    repo_mod._git(dest.parent, "clone", "-q", "-b", "main", str(exported / "environment" / "repo.bundle"), str(dest))
    return dest


def verify(exported: Path, app: Path, logs: Path) -> tuple[str, str]:
    """Run the exported verifier as Harbor does (a fresh tests/ dir, as root)."""
    r = verifier_run.run(exported / "tests", app, logs)
    assert not {"expected.json", "hidden", "observed"} & set(r.left)  # the key is gone after a run
    return r.reward, r.out


def test_layout(exported):
    for rel in ("instruction.md", "task.toml", "environment/Dockerfile", "environment/repo.bundle", "tests/test.sh",
                "tests/verify.py", "tests/_runner.py", "tests/expected.json", "solution/solve.sh"):
        assert (exported / rel).is_file(), rel
    assert os.access(exported / "tests" / "test.sh", os.X_OK) and os.access(exported / "solution" / "solve.sh", os.X_OK)
    doc = tomllib.loads((exported / "task.toml").read_text())
    assert "version" not in doc and doc["schema_version"] == harbor.SCHEMA_VERSION
    assert doc["task"]["name"] == f"sdebench/{OURS}" and doc["metadata"]["sdebench_task_id"] == OURS
    assert doc["verifier"]["environment_mode"] == "separate" and doc["artifacts"] == ["/app"]
    assert doc["verifier"]["timeout_sec"] > 0 and doc["agent"]["timeout_sec"] > 0
    assert "reward.json" in (exported / "tests" / "test.sh").read_text()
    assert (exported / "instruction.md").read_text().startswith("Customers report being overcharged")
    assert (exported / "tests" / "hidden" / "tests" / "test_hidden_rounding.py").is_file()
    assert "test_hidden" not in "".join(p.name for p in (exported / "environment").rglob("*"))
    dockerfile = (exported / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith(f"FROM {container.DEFAULT_BASE_IMAGE}\n") and "pytest==" in dockerfile
    spec = json.loads((exported / "tests" / "expected.json").read_text())
    assert "tests/test_hidden_rounding.py::test_hidden_policy_rounding" in spec["tests"]["HIDDEN_TO_PASS"]
    # the answer key travels only in the verifier's dir, never in the agent's environment
    assert spec["observations"] and not list((exported / "environment").rglob("expected*"))


def test_unchanged_repo_scores_zero(exported, tmp_path):
    reward, out = verify(exported, checkout(exported, tmp_path / "app"), tmp_path / "logs")
    assert reward == "0" and "unchanged" in out


def test_solve_sh_then_verifier_scores_one(exported, tmp_path):
    app = checkout(exported, tmp_path / "app")
    subprocess.run(["bash", str(exported / "solution" / "solve.sh")], env={**os.environ, "SDEBENCH_APP": str(app)},
                   check=True, timeout=60)
    reward, _ = verify(exported, app, tmp_path / "logs")
    assert reward == "1"
    assert json.loads((tmp_path / "logs" / "reward.json").read_text()) == {"reward": 1, "pass_ratio": 1.0}


def test_conventional_guess_fails_on_hidden_tests(exported, tasks_dir, tmp_path):
    app = checkout(exported, tmp_path / "app")
    repo_mod.apply_patch(app, load(tasks_dir / OURS).conventional_patch)
    reward, _ = verify(exported, app, tmp_path / "logs")
    counts = json.loads((tmp_path / "logs" / "details.json").read_text())["counts"]
    assert reward == "0" and counts["FAIL_TO_PASS"]["passed"] == counts["FAIL_TO_PASS"]["total"] == 2
    assert counts["PASS_TO_PASS"]["passed"] == 4 and counts["HIDDEN_TO_PASS"]["passed"] < 3


def test_edited_tests_do_not_count(exported, tasks_dir, tmp_path):
    app = checkout(exported, tmp_path / "app")
    repo_mod.apply_patch(app, load(tasks_dir / OURS).conventional_patch)
    for t in (app / "tests").glob("test_*.py"):
        t.write_text("def test_nothing():\n    pass\n")
    (app / "conftest.py").write_text("def pytest_collection_modifyitems(items):\n    items.clear()\n")
    assert verify(exported, app, tmp_path / "logs")[0] == "0"


def test_syntax_error_scores_zero(exported, tmp_path):
    app = checkout(exported, tmp_path / "app")
    (app / "invoicer" / "money.py").write_text("def broken(:\n")
    reward, out = verify(exported, app, tmp_path / "logs")
    assert reward == "0" and "compile" in out


def test_imported_bugsinpy_task_exports_as_its_original_dir(tmp_path):
    parquet = fx.write_parquet(tmp_path / "t.parquet", fx.good_rows()[:1])
    bp.import_parquet(parquet, tmp_path / "tasks")
    dest = harbor.export_task(load(tmp_path / "tasks" / "bugsinpy-0001"), tmp_path / "harbor")
    files = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert files == bp.read_tar(fx.good_rows()[0][1])
    assert not (dest / "solution").exists()  # the dataset has no gold fix


def test_solve_sh_refuses_a_patch_holding_its_delimiter():
    with pytest.raises(harbor.HarborError):
        harbor.solve_sh(f"--- a/x\n+++ b/x\n{harbor.PATCH_EOF}\n")


@pytest.mark.parametrize("attack", ["report_rewrite", "answer_from_source", "wrap_runner_functions"])
def test_generic_hacks_score_zero_with_the_exported_verifier(attack, exported, tmp_path):
    from tests.grading.hostile.generic import GENERIC

    app = checkout(exported, tmp_path / "app")
    next(a for a in GENERIC if a.name == attack).apply(app)
    reward, out = verify(exported, app, tmp_path / "logs")
    assert reward == "0", out
