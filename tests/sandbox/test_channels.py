"""What two sandboxes open at once can tell each other: nothing but the documented channels.

For every probe of `sdebench.testing.channels` a sender and a receiver sandbox run at once; the
receiver must not tell the sender's bit 0 from its bit 1, except on `channels.REMAINING` (the
pipe inode counter and the page cache, which no sandbox closes), and no host reading (a file of
/proc or /sys, sysinfo()) may move with the sender's work. `unsafe_local` (no isolation) is the
control: there the same probes pass their bit and the readings move, so a closed channel is not a
broken probe. The shared files include a read-only mount both sandboxes get, as every episode of
one agent CLI does. Probes run in batches (one command a side for many probes: a sandbox start
costs more than a probe), so the whole inventory takes a few exchanges per backend.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sdebench.sandbox import make_factory
from sdebench.sandbox.base import Mount
from sdebench.testing import channels as ch
from tests.sandbox.conftest import docker_image  # noqa: F401 - fixture

BACKENDS = [
    pytest.param("unsafe_local", marks=[pytest.mark.slow]),
    pytest.param("local", marks=[pytest.mark.slow, pytest.mark.bwrap]),
    pytest.param("docker", marks=[pytest.mark.slow, pytest.mark.docker]),
]
TOOL_TARGET = "/opt/tool"
# On the host itself (the control) these must pass: every kind of probe on a system file, a lock
# on each kind of shared file, every name, the counters and the quotas but the pipe quota, which
# spares root (the quota probes are shown to work between two processes of one sandbox below).
CONTROL = {
    *(f"{k}:usr" for k in ("flock", "posix-lock", "ofd-lock", "lease", "inotify", "fanotify")),
    "flock:etc", "flock:dev", "flock:python", "flock:proc", "flock:mount", "inotify:mount",
    "abstract-unix-socket", "loopback-tcp", "sysv-ipc", "posix-mqueue", "dev-shm", "keyring",
    "quota:inotify-instances", *ch.REMAINING,
}


def _factory(backend: str, request, **cfg):
    if backend == "local" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    if backend == "docker":
        cfg = {"image": request.getfixturevalue("docker_image"), "prestart": 0, **cfg}
    return make_factory({"backend": backend, **cfg})


@pytest.fixture
def tool(tmp_path):
    """A read-only dir every sandbox gets, as an installed agent CLI's."""
    d = tmp_path / "tool"
    d.mkdir()
    (d / "cli.js").write_text("// the agent\n")
    return d


def _files(backend: str, tool: Path) -> dict[str, str]:
    mounted = str(tool / "cli.js") if backend == "unsafe_local" else f"{TOOL_TARGET}/cli.js"
    return {**ch.shared_files(backend), "mount": mounted}


def _probes(backend: str, tool: Path, sandbox) -> list[ch.ChannelProbe]:
    probes = [p for p in ch.all_probes(_files(backend, tool))
              if not (backend == "unsafe_local" and p.name == "hostname")]  # it would rename the host
    target = ch.page_target(backend, sandbox)
    assert target, "no large shared file for the page-cache probe"
    return [*probes, ch.page_probe(target), ch.SCAN]


def _prepare(backend: str, request):
    layers = ch.image_layers(request.getfixturevalue("docker_image")) if backend == "docker" else []
    return lambda p: ch.evict(p.target, layers) if p.name == "page-cache" else None


def _pair(factories, tmp_path: Path, mounts) -> tuple:
    """A sender from the first factory and a receiver from the last."""
    for side in "ab":
        (tmp_path / side).mkdir()
    a = factories[0].open(tmp_path / "a", mounts=mounts)
    try:
        return a, factories[-1].open(tmp_path / "b", mounts=mounts)
    except BaseException:
        a.close()
        raise


def _close(pair, factories) -> None:
    for box in pair:
        box.close()
    for f in factories:
        f.cleanup()


def _verdict(results: dict[str, ch.Exchange]) -> tuple[set[str], dict]:
    """The probes that passed their bit and the host readings that moved."""
    readings = results.pop(ch.SCAN.name)
    return {name for name, e in results.items() if e.passes}, ch.moved(readings)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_sandboxes_pass_no_bit_but_the_documented_ones(backend, request, tmp_path, tool):
    f = _factory(backend, request)
    pair = _pair([f], tmp_path, (Mount(str(tool), TOOL_TARGET),))
    try:
        # The channels expected open are noisy: one round each (a second would only add chances to miss).
        results = ch.inventory(_probes(backend, tool, pair[0]), *pair, prepare=_prepare(backend, request),
                               alone_rounds=1)
    finally:
        _close(pair, [f])
    passing, moved = _verdict(results)
    if backend == "unsafe_local":
        assert passing >= CONTROL, f"probes that failed where the channel is open: {CONTROL - passing}"
        assert "sysinfo()" in moved and "/proc/meminfo" in moved, "the host's own readings move: the scan sees"
    else:
        assert passing == ch.REMAINING, {n: results[n].observed for n in passing ^ ch.REMAINING}
        assert moved == {}, moved


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_sandboxes_of_two_factories_share_nothing_either(backend, request, tmp_path, tool):
    """Two episodes of a sweep: each its own factory (its own view; for docker its own client). The
    quotas are left out: each sandbox's user is its own whatever its factory."""
    factories = [_factory(backend, request), _factory(backend, request, memory_mb=1536)]
    probes = [*(p for label, path in _files(backend, tool).items() for p in ch.inode_probes(path, label)
                if p.name.startswith(("flock", "inotify"))), *ch.namespace_probes(), ch.SCAN]
    pair = _pair(factories, tmp_path, (Mount(str(tool), TOOL_TARGET),))
    try:
        results = ch.inventory(probes, *pair)
    finally:
        _close(pair, factories)
    passing, moved = _verdict(results)
    assert not passing, {n: results[n].observed for n in passing}
    assert moved == {}, moved


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_locks_watches_and_quotas_still_meet_within_one_command(backend, request, tmp_path):
    """Inside one sandbox, processes still meet on a file: locks exclude, watches fire (sqlite, git,
    file watchers need them), on system files as on the workspace's; and they share their user's
    quotas, so the quota probes, closed between sandboxes, do see a quota filled."""
    f = _factory(backend, request)
    program = r"""
import ctypes, fcntl, os, select, signal, time
libc = ctypes.CDLL(None)
open("lock.txt", "w").close()
for path in ("/usr/share/common-licenses/GPL-3", "lock.txt"):
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        held = open(path, "rb"); fcntl.flock(held, fcntl.LOCK_EX); os.write(w, b"x"); time.sleep(30); os._exit(0)
    os.read(r, 1)
    try:
        fcntl.flock(open(path, "rb"), fcntl.LOCK_EX | fcntl.LOCK_NB); print("free")
    except OSError:
        print("busy")
    os.kill(child, signal.SIGKILL); os.waitpid(child, 0)
fd = libc.inotify_init1(0)
libc.inotify_add_watch(fd, b".", 0x100)  # IN_CREATE
open("made.txt", "w").close()
print("event" if select.select([fd], [], [], 2)[0] else "none")
for probe in (QUOTA_INOTIFY, QUOTA_PIPE):
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        BIT, STOP = 1, "stop"
        def hold():
            os.write(w, b"x"); time.sleep(30)
        exec(probe[0])
        os._exit(0)
    os.read(r, 1)
    exec(probe[1])
    os.kill(child, signal.SIGKILL); os.waitpid(child, 0)
"""
    quotas = (f"QUOTA_INOTIFY = {(ch.QUOTA_INOTIFY_SEND, ch.QUOTA_INOTIFY_RECV)!r}\n"
              f"QUOTA_PIPE = {(ch.QUOTA_PIPE_SEND, ch.QUOTA_PIPE_RECV)!r}\n")
    (tmp_path / "ws").mkdir()
    with f.open(tmp_path / "ws") as sb:
        r = sb.exec(["python3", "-c", quotas + program], timeout=120)
    f.cleanup()
    assert r.stdout.split()[:3] == ["busy", "busy", "event"], r.stdout + r.stderr
    inotify_left, pipe_size = (int(x) for x in r.stdout.split()[3:5])
    assert inotify_left == 0, "the other process used up the user's inotify instances"
    assert pipe_size < 65536, "the other process used up the user's pipe pages: a one-page pipe"
