"""experiments/inference.py end to end: environment server + scripted test model server, over HTTP."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import httpx
import pytest

from sdebench.interop import bugsinpy as bp
from tests.env.helpers import ROOT, serve
from tests.interop import bugsinpy_fixture as fx

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("sdebench.testing.testmodel") is None, reason="sdebench.testing.testmodel not present"),
]


def test_baseline_solves_a_task_through_both_servers(tmp_path):
    from sdebench.testing.testmodel import subprocess_server

    bp.import_parquet(fx.write_parquet(tmp_path / "t.parquet", fx.good_rows()[:1]), tmp_path / "tasks")
    script = [
        {"tool": "submit_fix", "arguments": {"path": "solution.py", "patched_code": fx.BUGGY_ADD.replace("a - b", "a * b")}},
        {"text": "The code looks right to me."},
        {"tool": "submit_fix", "arguments": {"patched_code": fx.FIXED_ADD}},
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    with serve(tmp_path / "tasks") as env_url, subprocess_server(tmp_path / "script.json") as model_url:
        argv = [sys.executable, str(ROOT / "experiments" / "inference.py"), "--server", env_url,
                "--model", "openai/testmodel", "--api-base", model_url, "--api-key", "k",
                "--out", str(tmp_path / "runs.jsonl")]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert p.returncode == 0, p.stderr
        received = httpx.get(model_url.removesuffix("/v1") + "/requests").json()
    rec = json.loads((tmp_path / "runs.jsonl").read_text())
    assert rec["task_id"] == "bugsinpy-0001" and rec["error"] is None
    assert rec["all_tests_pass"] and rec["done"] and rec["steps"] == 2 and rec["model_calls"] == 3
    assert len(rec["rewards"]) == 2 and rec["rewards"][0] < rec["rewards"][1] == rec["final_reward"]
    assert rec["prompt_tokens"] == 300 and rec["completion_tokens"] == 30
    assert "solved 1 of 1" in p.stderr
    first = received[0]["body"]
    assert first["model"] == "testmodel" and first["tools"][0]["function"]["name"] == "submit_fix"
    assert "def add(a, b):" in first["messages"][1]["content"] and "Held-out tests fail." in first["messages"][1]["content"]
    after_step = received[1]["body"]["messages"][-1]
    assert after_step["role"] == "tool" and "step 1 of" in after_step["content"]
    after_text = received[2]["body"]["messages"][-1]
    assert after_text["role"] == "user" and "no submit_fix call" in after_text["content"]


def test_model_errors_are_recorded_not_raised(tmp_path):
    from sdebench.testing.testmodel import subprocess_server

    bp.import_parquet(fx.write_parquet(tmp_path / "t.parquet", fx.good_rows()[:1]), tmp_path / "tasks")
    (tmp_path / "script.json").write_text(json.dumps([{"error": 500, "message": "upstream down"}]))
    with serve(tmp_path / "tasks") as env_url, subprocess_server(tmp_path / "script.json") as model_url:
        argv = [sys.executable, str(ROOT / "experiments" / "inference.py"), "--server", env_url,
                "--model", "openai/testmodel", "--api-base", model_url]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and "Traceback" not in p.stderr
    rec = json.loads(p.stdout.splitlines()[0])
    assert not rec["all_tests_pass"] and "upstream down" in rec["error"]
