"""The Inspect AI adapter (sdebench.inspect) against the real `inspect-ai`, offline with a scripted
mockllm: one task resolved at the first submit, another unresolved after its feedback rounds; and
the task found by name (`sdebench/sdebench`) in an installed wheel through the entry point."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.interop import peers

pytestmark = [pytest.mark.peers, pytest.mark.slow]
GOOD, BAD = "billing-rounding-v0-K", "ttlcache-v0-K"
ATTEMPTS = 3
DRIVER = Path(__file__).with_name("inspect_driver.py")


@pytest.fixture(scope="module")
def log(tasks_dir, tmp_path_factory) -> dict:
    bin_dir = peers.bin_dir("inspect")
    tmp = tmp_path_factory.mktemp("inspect")
    p = peers.run([str(bin_dir / "python"), str(DRIVER), str(tasks_dir), str(tmp / "logs"), GOOD, BAD, str(ATTEMPTS)],
                  tmp, timeout=900, HOME=str(tmp), INSPECT_LOG_DIR=str(tmp / "logs"))
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    return json.loads(Path(p.stdout.strip().splitlines()[-1].removeprefix("file://")).read_text())


def by_id(log: dict) -> dict[str, dict]:
    return {s["id"]: s for s in log["samples"]}


def test_the_eval_scores_one_of_two(log):
    assert log["status"] == "success"
    (score,) = log["results"]["scores"]
    assert score["metrics"]["mean"]["value"] == pytest.approx(0.5)


def test_resolved_at_the_first_submit(log):
    s = by_id(log)[GOOD]
    (sc,) = s["scores"].values()
    assert sc["value"] == 1.0 and sc["metadata"]["resolved"] and sc["metadata"]["interventions"] == 0
    assert s["metadata"]["source"] == "K" and s["metadata"]["delivery"] == "squashed"
    # The sandbox held no hidden test: the agent's `find` counted none.
    tool_out = [m for m in s["messages"] if m["role"] == "tool"]
    assert tool_out[0]["content"].strip() == "0"


def test_unresolved_after_feedback_through_its_attempts(log):
    s = by_id(log)[BAD]
    (sc,) = s["scores"].values()
    assert sc["value"] == 0.0 and not sc["metadata"]["resolved"]
    assert sc["metadata"]["interventions"] == ATTEMPTS - 1
    fed = [m for m in s["messages"] if m["role"] == "user" and "not accepted yet" in str(m["content"])]
    assert len(fed) == ATTEMPTS - 1
    text = json.dumps(s["messages"])
    assert "No source change" in text  # the grader's unchanged guard, fed back
    assert "test_hidden" not in text  # never a hidden test's name or source


def test_inspect_eval_finds_the_task_and_passes_its_arguments(tmp_path):
    """The documented `inspect eval` command line: the task is found and -T arguments reach it (a bad
    delivery fails before any model call, so this needs no model)."""
    inspect_cli = str(peers.bin_dir("inspect") / "inspect")
    p = peers.run([inspect_cli, "list", "tasks", "sdebench/inspect/tasks.py"], peers.ROOT, timeout=300, HOME=str(tmp_path))
    assert p.stdout.split() == ["sdebench/inspect/tasks.py@sdebench"], p.stdout + p.stderr
    p = peers.run([inspect_cli, "eval", "sdebench/inspect/tasks.py@sdebench", "--model", "mockllm/model",
                   "-T", "delivery=nope", "-T", f"ids={GOOD}", "--log-dir", str(tmp_path / "logs")],
                  peers.ROOT, timeout=300, HOME=str(tmp_path))
    assert p.returncode != 0 and "unknown delivery 'nope'" in p.stdout + p.stderr


def test_inspect_eval_finds_the_installed_package_task(tasks_dir, tmp_path, sdebench_wheel):
    """After a `pip install` of sdebench's wheel, `inspect eval sdebench/sdebench` finds the task through
    the `inspect_ai` entry point (no file path, no checkout on the path). mockllm's default reply calls
    no tool, so the agent never edits: the sample is graded unchanged, 0. mockllm counts tokens with
    tiktoken's o200k_base: TIKTOKEN_CACHE_DIR points at the copy litellm ships, so nothing is downloaded."""
    python = peers.bin_dir("inspect") / "python"
    site = tmp_path / "site-packages"  # a pip --target dir: Inspect counts a package there as installed
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(sdebench_wheel)],
                   check=True, capture_output=True, timeout=600)
    tiktoken_cache = next((python.parents[1] / "lib").glob("python3.*/site-packages/litellm/litellm_core_utils/tokenizers"))
    run = tmp_path / "run"
    run.mkdir()
    p = peers.run([str(python.with_name("inspect")), "eval", "sdebench/sdebench", "--model", "mockllm/model",
                   "-T", f"tasks_dir={tasks_dir}", "-T", f"ids={GOOD}", "-T", "sandbox=local",
                   "-T", "grader_sandbox=unsafe_local", "-T", "attempts=1", "--log-dir", str(tmp_path / "logs"),
                   "--log-format", "json", "--display", "none"],
                  run, timeout=600, HOME=str(tmp_path), PYTHONPATH=str(site), TIKTOKEN_CACHE_DIR=str(tiktoken_cache))
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    (path,) = (tmp_path / "logs").glob("*.json")
    log = json.loads(path.read_text())
    assert log["status"] == "success" and log["eval"]["task_registry_name"] == "sdebench/sdebench"
    assert log["eval"]["packages"]["sdebench"] == "0.1.0"
    (sample,) = log["samples"]
    (score,) = sample["scores"].values()
    assert sample["id"] == GOOD and score["value"] == 0.0 and score["metadata"]["guards"] == ["unchanged"]
