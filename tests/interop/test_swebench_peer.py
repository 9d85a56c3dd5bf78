"""The SWE-bench task repo against the real `swebench` 5.x: `swebench dataset check` accepts it and
`swebench eval --task-repo` grades it with its own harness in the local Docker engine."""

from __future__ import annotations

import contextlib
import json

import pytest

from sdebench.interop import swebench
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load
from tests.interop import peers

pytestmark = [pytest.mark.peers, pytest.mark.docker, pytest.mark.slow]
# One plain task and one whose parametrized ids hold spaces (SWE-bench splits log lines on them).
IDS = ("billing-rounding-v0-K", "minicalc-erragg-v0-F")


@pytest.fixture(scope="module")
def task_repo(tasks_dir, tmp_path_factory):
    image = peers.docker_image()
    out = tmp_path_factory.mktemp("swe") / "task-repo"
    w = swebench.export_task_repo([load(tasks_dir / i) for i in IDS], out, make_factory({"backend": "unsafe_local"}),
                                  base_image=image)
    assert w.count == 2 and w.skipped == []
    yield out
    # SWE-bench leaves the instance images it built; they are ours to remove.
    import docker

    client = docker.from_env()
    for i in IDS:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(swebench.image_name(i), force=True)
    client.close()


def test_check_task_repo_accepts_the_export(task_repo, tmp_path):
    bin_dir = peers.bin_dir("swebench")
    p = peers.run([str(bin_dir / "swebench"), "dataset", "check", str(task_repo)], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "looks well formed" in p.stdout
    code = "from swebench.task.checks import check_task_repo; import sys; print(len(check_task_repo(sys.argv[1])))"
    p = peers.run([str(bin_dir / "python"), "-c", code, str(task_repo)], tmp_path)
    assert p.stdout.strip() == "0", p.stdout + p.stderr  # no warning either


def evaluate(task_repo, tmp_path, run_id: str, predictions: str) -> dict:
    bin_dir = peers.bin_dir("swebench")
    args = ["--gold"] if predictions == "gold" else ["-p", predictions]
    p = peers.run([str(bin_dir / "swebench"), "eval", "sdebench", *args, "--task-repo", str(task_repo), "-j", "2",
                   "--run-id", run_id, "-t", "600"], tmp_path, timeout=1500)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    reports = list(tmp_path.glob(f"*.{run_id}.json"))
    assert len(reports) == 1, p.stdout[-2000:]
    return json.loads(reports[0].read_text())


def test_gold_resolves_and_the_conventional_guess_does_not(task_repo, tasks_dir, tmp_path):
    gold = evaluate(task_repo, tmp_path, "gold", "gold")
    assert gold["error_instances"] == 0 and sorted(gold["resolved_ids"]) == sorted(IDS), gold
    preds = tmp_path / "conventional.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": "conventional",
                                         "model_patch": load(tasks_dir / i).conventional_patch}) + "\n" for i in IDS))
    conv = evaluate(task_repo, tmp_path, "conv", str(preds))
    assert conv["error_instances"] == 0 and conv["resolved_ids"] == [], conv
    assert sorted(conv["unresolved_ids"]) == sorted(IDS)
    # The harness's own per-test report: the visible repro passes, a hidden test fails.
    log = tmp_path / "logs" / "run_evaluation" / "conv" / "conventional" / IDS[0] / "report.json"
    status = json.loads(log.read_text())[IDS[0]]["tests_status"]["FAIL_TO_PASS"]
    assert any("test_repro" in t for t in status["success"]) and any("hidden" in t for t in status["failure"])
