import os
from pathlib import Path

import pytest

from sdebench.sandbox import SandboxError, make_factory, uids
from sdebench.sandbox.base import OUT_DIR
from sdebench.sandbox.docker import LABEL

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def factory(docker_image):
    f = make_factory({"backend": "docker", "image": docker_image, "memory_mb": 512, "pids_max": 64})
    yield f
    f.cleanup()


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    (d / "pkg").mkdir(parents=True)
    (d / "pkg" / "a.py").write_text("X = 1\n")
    (d / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (d / "run.sh").chmod(0o755)
    return d


@pytest.fixture
def box(factory, ws):
    with factory.open(ws) as sb:
        yield sb


def test_workspace_is_copied_in_and_out(box, ws, tmp_path):
    assert box.workdir == "/repo"
    r = box.exec("pwd; id -u; cat pkg/a.py; ./run.sh; echo new > made.txt", timeout=20)
    assert r.exit_code == 0, r.stderr
    pwd, uid, *rest = r.stdout.splitlines()
    assert (pwd, rest) == ("/repo", ["X = 1", "ran"])
    assert int(uid) >= uids.FIRST, "a user of the container's own, not root nor a shared one"
    assert not (ws / "made.txt").exists()  # the container holds a copy
    box.write_file("deep/er/f.txt", "content")
    assert box.read_file("deep/er/f.txt") == "content"
    out = tmp_path / "out"
    box.sync_out(out)
    assert (out / "made.txt").read_text() == "new\n"
    assert (out / "deep" / "er" / "f.txt").read_text() == "content"
    assert os.access(out / "run.sh", os.X_OK)


def test_no_network_and_read_only_system(box):
    code = "import socket; print([n for _, n in socket.if_nameindex()])"
    assert box.exec(["python3", "-c", code], timeout=20).stdout.strip() == "['lo']"
    r = box.exec("touch /usr/x 2>&1 || echo denied", timeout=20)
    assert "denied" in r.stdout


def test_timeout_and_output_cap(box):
    r = box.exec("sleep 300", timeout=2)
    assert r.timed_out and r.exit_code == 124 and r.duration_s < 10
    r = box.exec("head -c 20000000 /dev/zero | tr '\\0' y", timeout=60)
    assert r.truncated and len(r.stdout) < box.opts.output_cap + 200


def test_leftover_and_runaway_processes_are_reaped(box):
    r = box.exec("(setsid sleep 999 &); :(){ :|:& };:; sleep 1; echo parent-done", timeout=15)
    assert "Resource temporarily unavailable" in r.stderr or r.timed_out
    ps = box.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '", timeout=20)
    assert ps.exit_code == 0, ps.stderr
    assert "sleep 999" not in ps.stdout
    assert "sleep infinity" in ps.stdout  # the container itself is back


def test_memory_limit(box):
    r = box.exec(["python3", "-c", "b = bytearray(2 * 1024**3); print('allocated')"], timeout=60)
    assert r.exit_code != 0 and "allocated" not in r.stdout


def test_links_out_of_the_workspace_never_enter_the_container(factory, ws):
    (ws / "leak").symlink_to("/etc/hostname")
    with factory.open(ws) as sb:
        assert sb.exec("ls -A", timeout=20).stdout.split() == ["pkg", "run.sh"]
        with pytest.raises(SandboxError):
            sb.read_file("../etc/passwd")


def test_close_removes_the_container_and_cleanup_prunes(factory, ws):
    sb = factory.open(ws)
    cid = sb.container.id
    sb.close()
    sb.close()
    sb.removal.join(60)  # removal runs in the background
    ids = [c.id for c in factory.client.containers.list(all=True, filters={"label": f"{LABEL}=1"})]
    assert cid not in ids
    stray = factory.open(ws)
    stray_id = stray.container.id
    factory.cleanup()  # a sweep end: containers of this process go too
    ids = [c.id for c in factory.client.containers.list(all=True, filters={"label": f"{LABEL}=1"})]
    assert stray_id not in ids


def test_missing_image_is_a_clear_error(docker_image):
    with pytest.raises(SandboxError, match="not found: build it with `docker build"):
        make_factory({"backend": "docker", "image": "sdebench-no-such-image:0"})


def test_unknown_option_is_named():
    with pytest.raises(SandboxError, match="memroy_mb"):
        make_factory({"backend": "docker", "memroy_mb": 1})


def test_dockerfile_is_shipped():
    text = (Path(__file__).resolve().parents[2] / "sdebench" / "sandbox" / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in text and "pytest" in text


def test_read_only_workspace_allows_only_the_out_dir(factory, ws, tmp_path):
    with factory.open(ws, read_only=True) as sb:
        r = sb.exec(f"echo x > pkg/a.py; rm -f run.sh; mkdir new; echo ok > {OUT_DIR}/r.json; cat {OUT_DIR}/r.json", timeout=20)
        assert r.stdout == "ok\n"
        assert r.stderr.count("Permission denied") >= 3
        assert sb.read_file("pkg/a.py") == "X = 1\n"


def test_a_used_container_is_replaced_when_its_sandbox_closes_not_when_it_opens(docker_image, ws):
    f = make_factory({"backend": "docker", "image": docker_image, "prestart": 2})
    try:
        f.settle()
        assert f._pool.qsize() == 2
        sb = f.open(ws, read_only=True)
        # Nothing started while the sandbox is in use: its commands get the CPU.
        assert f._pool.qsize() == 1 and f._filling == 0
        used = sb.container.id
        assert sb.exec("cat pkg/a.py", timeout=20).stdout == "X = 1\n"
        sb.close()
        f.settle()
        assert f._pool.qsize() == 2
        ids = [c.id for c in f.client.containers.list(all=True, filters={"label": f"{LABEL}=1"})]
        assert used not in ids
    finally:
        f.cleanup()
