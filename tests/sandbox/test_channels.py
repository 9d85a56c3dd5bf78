"""What two sandboxes open at once can tell each other: nothing but the documented channels.

For every probe of `sdebench.testing.channels` a sender and a receiver sandbox run at once; the
receiver must not tell the sender's bit 0 from its bit 1, except on `channels.REMAINING` (the
pipe inode counter and the page cache, which no sandbox closes). `unsafe_local` (no isolation) is
the control: there the same probes pass their bit, so a closed channel is not a broken probe. The
shared files include a read-only mount both sandboxes get, as every episode of one agent CLI does.
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
PAIRS = 4  # sandbox pairs probing at once
# On the host itself (the control) these must pass: every kind of probe on a system file, a lock
# on each kind of shared file, every name, counter and quota.
CONTROL = {
    *(f"{k}:usr" for k in ("flock", "posix-lock", "ofd-lock", "lease", "inotify", "fanotify")),
    "flock:etc", "flock:dev", "flock:python", "flock:proc", "flock:mount", "inotify:mount",
    "sysinfo", "abstract-unix-socket", "loopback-tcp", "sysv-ipc", "posix-mqueue", "dev-shm", "keyring",
    "quota:inotify-instances", "quota:pipe-pages", *ch.REMAINING,
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


def _probes(backend: str, tool: Path, sandbox) -> list[ch.Probe]:
    probes = [p for p in ch.all_probes(_files(backend, tool))
              if not (backend == "unsafe_local" and p.name == "hostname")]  # it would rename the host
    target = ch.page_target(backend, sandbox)
    assert target, "no large shared file for the page-cache probe"
    return [*probes, ch.page_probe(target)]


def _prepare(backend: str, request):
    layers = ch.image_layers(request.getfixturevalue("docker_image")) if backend == "docker" else []
    return lambda p: ch.evict(p.target, layers) if p.name == "page-cache" else None


def _pairs(factories, tmp_path: Path, mounts, n: int = PAIRS) -> list[tuple]:
    """`n` (sender, receiver) pairs, the sender from the first factory, the receiver from the last."""
    out = []
    for i in range(n):
        for side in "ab":
            (tmp_path / f"{side}{i}").mkdir()
        out.append((factories[0].open(tmp_path / f"a{i}", mounts=mounts),
                    factories[-1].open(tmp_path / f"b{i}", mounts=mounts)))
    return out


def _close(pairs, factories) -> None:
    for a, b in pairs:
        a.close()
        b.close()
    for f in factories:
        f.cleanup()


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_sandboxes_pass_no_bit_but_the_documented_ones(backend, request, tmp_path, tool):
    f = _factory(backend, request)
    pairs = _pairs([f], tmp_path, (Mount(str(tool), TOOL_TARGET),))
    try:
        a, b = pairs[0]
        results = ch.inventory(_probes(backend, tool, a), pairs, prepare=_prepare(backend, request))
        moved = ch.changed_readings(a, b)
    finally:
        _close(pairs, [f])
    passing = {name for name, e in results.items() if e.passes}
    if backend == "unsafe_local":
        assert passing >= CONTROL, f"probes that failed where the channel is open: {CONTROL - passing}"
        assert moved, "the host's own readings move: the scan sees"
    else:
        assert passing == ch.REMAINING, {n: results[n].observed for n in passing ^ ch.REMAINING}
        assert moved == {}, moved


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_sandboxes_of_two_factories_share_nothing_either(backend, request, tmp_path, tool):
    """Two episodes of a sweep: each its own factory (its own view; for docker its own client)."""
    factories = [_factory(backend, request), _factory(backend, request, memory_mb=1536)]
    probes = [*(p for label, path in _files(backend, tool).items() for p in ch.inode_probes(path, label)
                if p.name.startswith(("flock", "inotify"))),
              *ch.quota_probes(), ch.counter_probes()[0]]
    pairs = _pairs(factories, tmp_path, (Mount(str(tool), TOOL_TARGET),))
    try:
        results = ch.inventory(probes, pairs)
    finally:
        _close(pairs, factories)
    assert not [n for n, e in results.items() if e.passes], {n: e.observed for n, e in results.items()}


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_locks_and_watches_still_work_within_one_command(backend, request, tmp_path):
    """Inside one sandbox, processes still meet on a file: locks exclude, watches fire (sqlite, git,
    file watchers need them), on system files as on the workspace's."""
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
"""
    (tmp_path / "ws").mkdir()
    with f.open(tmp_path / "ws") as sb:
        r = sb.exec(["python3", "-c", program], timeout=60)
    f.cleanup()
    assert r.stdout.split() == ["busy", "busy", "event"], r.stdout + r.stderr
