import contextlib
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from sdebench.sandbox import SandboxError, make_factory
from sdebench.sandbox.base import OUT_DIR
from sdebench.sandbox.local import INSTALL_HINT, package_dir

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(
        shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
    ),
]


@pytest.fixture
def store(tmp_path):
    """A fake task store holding a secret, to be masked."""
    d = tmp_path / "tasks"
    (d / "t1" / "hidden").mkdir(parents=True)
    (d / "t1" / "hidden" / "test_secret.py").write_text("SECRET = 'hidden-answer'\n")
    return d


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "a.txt").write_text("hello\n")
    return d


@pytest.fixture
def box(ws, store, tmp_path):
    factory = make_factory(
        {"backend": "local", "tasks_dir": str(store), "results_dir": str(tmp_path / "results")}
    )
    with factory.open(ws) as sb:
        yield sb


def test_exec_runs_in_the_workspace_and_writes_through(box, ws):
    r = box.exec("pwd; cat a.txt; echo made > new.txt", timeout=10)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [box.workdir, "hello"]
    assert (ws / "new.txt").read_text() == "made\n"
    assert box.read_file("new.txt") == "made\n"
    box.write_file("sub/dir/b.txt", "bee")
    assert box.exec(["cat", "sub/dir/b.txt"], timeout=10).stdout == "bee"


def test_root_and_workspace_parent_are_read_only(box, ws):
    r = box.exec(f"touch /usr/sdebench-x; touch {ws.parent}/outside; echo done", timeout=10)
    assert "Read-only file system" in r.stderr
    assert not Path("/usr/sdebench-x").exists()
    assert not (ws.parent / "outside").exists()


def test_network_is_cut(box):
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    accepted = []
    srv.settimeout(5)

    def serve():
        with contextlib.suppress(OSError):
            accepted.append(srv.accept())

    t = threading.Thread(target=serve)
    t.start()
    code = f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('CONNECTED')\nexcept OSError as e:\n    print('FAILED', e)"
    r = box.exec(["python3", "-c", code], timeout=15)
    srv.close()
    t.join()
    assert "FAILED" in r.stdout, r.stdout + r.stderr
    assert accepted == []
    r = box.exec(["python3", "-c", "import socket; print([n for _, n in socket.if_nameindex()])"], timeout=10)
    assert r.stdout.strip() == "['lo']"


def test_task_store_home_and_package_are_masked(box, store):
    r = box.exec(
        f"ls -A {store}; cat {store}/t1/hidden/test_secret.py; ls -A {package_dir()}; ls -A ~ $HOME",
        timeout=10,
    )
    assert "hidden-answer" not in r.stdout
    assert "t1" not in r.stdout
    assert "grade.py" not in r.stdout
    assert "No such file" in r.stderr


def test_tmp_is_fresh_and_private(box, tmp_path):
    marker = Path("/tmp") / f"sdebench-host-{os.getpid()}"
    marker.write_text("host")
    try:
        r = box.exec(f"ls -A /tmp; echo inside > /tmp/inside-{os.getpid()}", timeout=10)
        assert marker.name not in r.stdout
        assert not Path(f"/tmp/inside-{os.getpid()}").exists()
    finally:
        marker.unlink()


def test_timeout_kills_the_whole_process_group(box):
    r = box.exec("sleep 4321.5 & sleep 4321.5; echo never", timeout=1)
    assert r.timed_out and r.exit_code == 124
    assert r.duration_s < 5
    assert "never" not in r.stdout
    leftovers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"4321.5" in Path(f"/proc/{pid}/cmdline").read_bytes():
                leftovers.append(pid)
        except OSError:
            pass
    assert leftovers == []


def test_output_is_capped(box):
    r = box.exec("head -c 20000000 /dev/zero | tr '\\0' x", timeout=30)
    assert r.truncated
    assert len(r.stdout) < box.opts.output_cap + 200
    assert "bytes truncated" in r.stdout


def test_process_count_is_limited(box):
    if box.cgroup is None:
        pytest.skip("no writable cgroup on this machine")
    r = box.exec(":(){ :|:& };:; sleep 1; echo survived", timeout=20)
    assert "Resource temporarily unavailable" in r.stderr
    # The host still forks fine and the sandbox is usable afterwards.
    assert box.exec("echo ok", timeout=10).stdout == "ok\n"


def test_memory_is_limited(box):
    r = box.exec(["python3", "-c", "b = bytearray(3 * 1024**3); print('allocated')"], timeout=30)
    assert r.exit_code != 0
    assert "allocated" not in r.stdout


def test_environment_carries_no_secrets(box, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    r = box.exec("env", timeout=10)
    assert "sk-should-not-leak" not in r.stdout
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" in r.stdout


def test_host_side_file_access_refuses_links_out(box, ws):
    (ws / "link").symlink_to("/etc/hostname")
    with pytest.raises(SandboxError, match="outside"):
        box.read_file("link")
    with pytest.raises(SandboxError, match="outside"):
        box.write_file("../escape.txt", "x")
    with pytest.raises(SandboxError):
        box.write_file("/etc/x", "x")
    assert not (ws.parent / "escape.txt").exists()


def test_sync_out_drops_links_out(box, ws, tmp_path):
    (ws / "link").symlink_to("/etc/hostname")
    (ws / "inner").symlink_to("a.txt")
    dest = tmp_path / "out"
    box.sync_out(dest)
    assert (dest / "a.txt").read_text() == "hello\n"
    assert not (dest / "link").exists()
    assert (dest / "inner").read_text() == "hello\n" and not (dest / "inner").is_symlink()


def test_close_removes_the_cgroup(ws, store):
    factory = make_factory({"backend": "local", "tasks_dir": str(store)})
    sb = factory.open(ws)
    dirs = list(sb.cgroup.dirs) if sb.cgroup else []
    sb.exec("true", timeout=10)
    sb.close()
    sb.close()
    assert all(not d.exists() for d in dirs)
    with pytest.raises(SandboxError, match="closed"):
        sb.exec("true")


def test_missing_bubblewrap_refuses_with_the_install_hint(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(SandboxError) as e:
        make_factory({"backend": "local"})
    assert str(e.value) == INSTALL_HINT
    assert "apt-get install bubblewrap" in INSTALL_HINT


def test_read_only_workspace_allows_only_the_out_dir(ws, store):
    factory = make_factory({"backend": "local", "tasks_dir": str(store)})
    with factory.open(ws, read_only=True) as sb:
        r = sb.exec(f"echo x > a.txt; rm -f a.txt; mkdir new; echo ok > {OUT_DIR}/r.json; cat {OUT_DIR}/r.json", timeout=10)
        assert r.stdout == "ok\n"
        assert r.stderr.count("Read-only file system") >= 2
    assert (ws / "a.txt").read_text() == "hello\n"
    assert not (ws / "new").exists()


def test_a_virtualenv_under_tmp_grades_like_any_interpreter(tmp_path):
    """The sandbox's fresh /tmp must not hide the interpreter: run a real grade from a venv in /tmp."""
    import subprocess
    import sys
    import tempfile

    venv = Path(tempfile.mkdtemp(prefix="venv-", dir="/tmp"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                       check=True, timeout=120)
        python = venv / "bin" / "python"
        # --system-site-packages reaches the base install's packages; when this test itself runs in a
        # virtualenv, the new one must see that one's packages too (a .pth line per site dir)
        import site

        lib = next((venv / "lib").glob("python3*")) / "site-packages"
        (lib / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
        root = Path(__file__).resolve().parents[2]
        code = (
            "import sys; from pathlib import Path\n"
            "assert sys.prefix.startswith('/tmp/'), sys.prefix\n"
            "from sdebench.grading.grade import grade\n"
            "from sdebench.sandbox import make_factory\n"
            "from sdebench.testing.sample_task import checkout, write_sample_task\n"
            f"t = write_sample_task(Path({str(tmp_path)!r}) / 'store' / 'sample')\n"
            f"ws = checkout(t, Path({str(tmp_path)!r}) / 'ws', t.oracle_patch)\n"
            "g = grade(t, ws, make_factory({'backend': 'local', 'tasks_dir': str(t.path.parent)}))\n"
            "print('RESOLVED' if g.resolved else f'NOT {g.error} {g.feedback}')\n"
        )
        env = {**os.environ, "PYTHONPATH": str(root)}
        r = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert r.stdout.strip().endswith("RESOLVED"), r.stdout + r.stderr
    finally:
        shutil.rmtree(venv, ignore_errors=True)
