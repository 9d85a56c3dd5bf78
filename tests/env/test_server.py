"""The environment server over real HTTP: a child process on 127.0.0.1, driven with httpx."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from sdebench.interop import bugsinpy as bp
from tests.env.helpers import ROOT, serve
from tests.interop import bugsinpy_fixture as fx

pytestmark = pytest.mark.slow
OURS = "billing-rounding-v0-K"


@pytest.fixture(scope="module")
def tasks(tasks_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("servetasks")
    shutil.copytree(tasks_dir / OURS, root / OURS)
    assert bp.import_parquet(fx.write_parquet(root.parent / "s.parquet", fx.good_rows()), root).skipped == []
    return root


@pytest.fixture(scope="module")
def client(tasks):
    with serve(tasks, "--max-steps", "3") as url, httpx.Client(base_url=url, timeout=120) as c:
        yield c


def test_health_and_info(client):
    assert client.get("/health").json()["status"] == "healthy"
    info = client.get("/").json()
    assert [t["id"] for t in info["tasks"]] == ["billing-rounding-v0-K", "bugsinpy-0001", "bugsinpy-0002", "bugsinpy-0003"]
    assert info["tasks"][1]["grader"] == "bugsinpy" and info["max_steps"] == 3 and info["sandbox"] == "unsafe_local"


def test_an_episode_over_http(client, tasks):
    r = client.post("/reset", json={"task_id": OURS}).json()
    assert r["reward"] == 0.0 and r["done"] is False
    obs = r["observation"]
    eid = obs["episode_id"]
    assert list(obs["current_code"]) == ["invoicer/money.py"] and obs["step_number"] == 0
    assert "task_id" not in obs and OURS not in str(obs)  # the observation never names the task
    patch = (tasks / OURS / "oracle.patch").read_text()
    r = client.post("/step", json={"episode_id": eid, "action": {"diff": patch}})
    assert r.status_code == 200, r.text
    r = r.json()
    assert r["done"] and r["observation"]["info"]["all_tests_pass"] and r["reward"] == pytest.approx(0.9375)
    assert r["observation"]["reward_breakdown"]["normalized"] == r["reward"]
    st = client.get("/state", params={"episode_id": eid}).json()
    assert st["done"] and st["step_number"] == st["step_count"] == 1 and st["task_id"] == OURS
    assert st["episode_id"] == eid
    r = client.post("/step", json={"episode_id": eid, "action": {"diff": patch}})
    assert r.status_code == 409 and "episode is done" in r.json()["error"]


def test_openenv_routes(client):
    assert set(client.get("/schema").json()) == {"action", "observation", "state"}
    meta = client.get("/metadata").json()
    assert meta["name"] == "sdebench" and meta["description"]
    assert client.get("/openapi.json").json()["info"]["version"]
    assert client.post("/mcp", json={}).json()["jsonrpc"] == "2.0"
    tools = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
    assert tools == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}


def test_a_websocket_session(client, tasks):
    """OpenEnv's WebSocket protocol, spoken with the `websockets` client."""
    import json

    from websockets.sync.client import connect

    url = str(client.base_url).replace("http://", "ws://") + "/ws"
    with connect(url, open_timeout=30) as ws:
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=60))["type"] == "error"  # before reset
        ws.send(json.dumps({"type": "reset", "data": {"task_id": OURS}}))
        msg = json.loads(ws.recv(timeout=120))
        assert msg["type"] == "observation" and msg["data"]["done"] is False
        ws.send("{nope")
        assert json.loads(ws.recv(timeout=60))["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "step", "data": {"bogus": 1}}))
        assert json.loads(ws.recv(timeout=60))["data"]["code"] == "VALIDATION_ERROR"
        ws.send(json.dumps({"type": "step", "data": {"diff": (tasks / OURS / "oracle.patch").read_text()}}))
        msg = json.loads(ws.recv(timeout=120))
        assert msg["data"]["done"] is True and msg["data"]["reward"] == pytest.approx(0.9375)
        ws.send(json.dumps({"type": "state"}))
        st = json.loads(ws.recv(timeout=60))
        assert st["type"] == "state" and st["data"]["step_count"] == 1
        ws.send(json.dumps({"type": "close"}))


def test_concurrent_sessions_stay_apart(client):
    a = client.post("/reset", json={"task_id": "bugsinpy-0001"}).json()["observation"]["episode_id"]
    b = client.post("/reset", json={"task_id": "bugsinpy-0001"}).json()["observation"]["episode_id"]
    assert a != b
    wrong = fx.BUGGY_ADD.replace("a - b", "a * b")
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(client.post, "/step", json={"episode_id": a, "action": {"patched_code": fx.FIXED_ADD}})
        fb = pool.submit(client.post, "/step", json={"episode_id": b, "action": {"patched_code": wrong}})
        ra, rb = fa.result().json(), fb.result().json()
    assert ra["observation"]["info"]["all_tests_pass"] and ra["done"]
    assert not rb["observation"]["info"]["all_tests_pass"] and not rb["done"]
    assert ra["observation"]["current_code"]["solution.py"] == fx.FIXED_ADD
    assert rb["observation"]["current_code"]["solution.py"] == wrong
    sa = client.get("/state", params={"episode_id": a}).json()
    sb = client.get("/state", params={"episode_id": b}).json()
    assert sa["done"] and not sb["done"] and sa["rewards"] != sb["rewards"]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "message"),
    [
        ("post", "/reset", {"json": {"task_id": "no-such-task"}}, 404, "unknown task 'no-such-task'"),
        ("post", "/reset", {"json": {"seed": "abc"}}, 422, "invalid request: seed:"),
        ("post", "/reset", {"json": {"task": "x"}}, 422, "invalid request: task: Extra inputs"),
        ("post", "/reset", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 422, "invalid request"),
        ("post", "/step", {"json": {"action": {"patched_code": "x = 1\n"}}}, 404, "missing episode_id: call POST /reset first"),
        ("post", "/step", {"json": {"episode_id": "feedbeef", "action": {"patched_code": "x"}}}, 404, "unknown episode_id 'feedbeef'"),
        ("post", "/step", {"json": {"episode_id": "x"}}, 422, "invalid request: action: Field required"),
        ("post", "/step", {"json": {"episode_id": "x", "action": {"patched_code": 5}}}, 422, "action.patched_code"),
        ("get", "/state", {}, 404, "missing episode_id"),
        ("get", "/state", {"params": {"episode_id": "nope"}}, 404, "unknown episode_id"),
    ],
)
def test_bad_requests_get_a_clear_4xx(client, method, path, kwargs, status, message):
    r = getattr(client, method)(path, **kwargs)
    assert r.status_code == status, r.text
    assert message in r.json()["error"]
    assert client.get("/health").status_code == 200  # and the server stays up


def test_bad_action_is_400_and_costs_no_step(client):
    eid = client.post("/reset", json={"task_id": OURS}).json()["observation"]["episode_id"]
    r = client.post("/step", json={"episode_id": eid, "action": {"patched_code": "x = 1\n", "diff": "y"}})
    assert r.status_code == 400 and "exactly one" in r.json()["error"]
    r = client.post("/step", json={"episode_id": eid, "action": {"path": "tests/test_invoice.py", "patched_code": ""}})
    assert r.status_code == 400 and "test or pytest-config" in r.json()["error"]
    assert client.get("/state", params={"episode_id": eid}).json()["step_number"] == 0


def test_reset_with_empty_body_uses_seed_zero(client):
    r = client.post("/reset")
    assert r.status_code == 200
    eid = r.json()["observation"]["episode_id"]
    assert client.get("/state", params={"episode_id": eid}).json()["task_id"] == OURS


def test_cli_refuses_a_missing_tasks_dir(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "sdebench.serve", "--tasks-dir", str(tmp_path / "nope"), "--port", "0"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "does not exist" in p.stderr


def test_host_flag_listens_on_every_interface(tasks, tmp_path):
    """--host 0.0.0.0 (a container's choice) serves on every interface; a host it cannot bind is one line, exit 2."""
    with serve(tasks, "--host", "0.0.0.0") as url:
        assert url.startswith("http://0.0.0.0:")
        port = url.rsplit(":", 1)[1]
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=30).json()["status"] == "healthy"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "sdebench.serve", "--tasks-dir", str(tasks), "--port", "0",
                        "--host", "203.0.113.7"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "cannot listen on 203.0.113.7" in p.stderr
