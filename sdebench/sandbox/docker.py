"""`sandbox=docker`: one container per opened sandbox, driven by the docker SDK.

The container has no network, memory and pids limits, a tmpfs /tmp, no capabilities, runs as
an unprivileged user, and carries the label `sdebench=1`. The workspace is copied in and out by
tar archive, at /repo; each exec is wrapped in an in-container `timeout -k`. Output is streamed
and capped so a flood never lands in host memory. The factory keeps `prestart` containers
started ahead of need (each is used by one sandbox, then removed), so opening a sandbox costs
only the copy of the workspace. A used container is replaced when its sandbox closes, not when
it opens: starting a container costs the engine about as much CPU as a short test run, and the
sandbox just opened (a grading phase) needs that CPU now.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import posixpath
import queue
import secrets
import shutil
import stat as stat_mod
import tarfile
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from sdebench.sandbox import procview, seccomp, uids
from sdebench.sandbox.base import (
    DEFAULT_OUTPUT_CAP,
    OUT_DIR,
    TRUNCATION_MARKER,
    WATCH_POLL_S,
    WORKDIR,
    ExecResult,
    Mount,
    SandboxError,
    Watch,
)
from sdebench.sandbox.files import DEFAULT_MAX_BYTES, CopyReport, walk_tree
from sdebench.sandbox.unsafe import base_env

ARCHIVE_ROOT = WORKDIR.strip("/")
LABEL = "sdebench"
PID_LABEL = "sdebench.pid"
UID_LABEL = "sdebench.uid"
DEFAULT_IMAGE = "sdebench-py:3.11"
DOCKERFILE_DIR = Path(__file__).resolve().parent
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KILL_GRACE_S = 2
MIB = 1024 * 1024
SPOOL_BYTES = 16 * MIB  # a workspace archive larger than this is spooled to disk
PRIVATE_PREFIX = "sdb-ct-"
# The world-writable dirs of a Debian image.
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/run/lock")
COUNT_PIDS = "import os; print(sum(p.isdigit() for p in os.listdir('/proc')))"


@dataclass(frozen=True)
class DockerOptions:
    """Image and limits of the docker backend (the `sandbox=docker` config group)."""

    image: str = DEFAULT_IMAGE
    output_cap: int = DEFAULT_OUTPUT_CAP
    memory_mb: int = 2048
    pids_max: int = 256
    tmp_size_mb: int = 256
    user: str = "auto"  # uid:gid commands run as (owning the workspace); auto: one of its own per container
    cpus: float = 0.0  # 0 = no CPU quota
    max_workspace_mb: int = DEFAULT_MAX_BYTES // MIB
    client_timeout_s: int = 900  # socket timeout towards the engine; execs are bounded in-container
    prestart: int = 3  # containers kept started ahead of need: an agent's and one grade's two (0: none)
    seccomp: bool = True  # refuse the system calls of sdebench.sandbox.seccomp (replaces the engine's profile)


def _uid_gid(user: str) -> tuple[int, int]:
    if user == "auto":
        return -1, -1  # claimed per container
    uid, _, gid = user.partition(":")
    try:
        return int(uid), int(gid or uid)
    except ValueError:
        raise SandboxError(f"sandbox.docker user must be numeric 'uid:gid', got {user!r}") from None


def _clean_rel(rel: str) -> str:
    if posixpath.isabs(rel):
        raise SandboxError(f"path {rel!r} must be relative to the workspace")
    norm = posixpath.normpath(rel)
    if norm == ".." or norm.startswith("../"):
        raise SandboxError(f"path {rel!r} points outside the workspace")
    return norm


class _Capture:
    """Keeps the head and the tail of a stream, counting what falls in between."""

    def __init__(self, cap: int):
        self.half = cap // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_len += len(chunk)
            while self.tail and self.tail_len - len(self.tail[0]) >= self.half:
                self.tail_len -= len(self.tail.popleft())

    def text(self) -> tuple[str, bool]:
        tail = b"".join(self.tail)
        dropped = self.total - len(self.head) - min(len(tail), self.half)
        if dropped <= 0:
            return (bytes(self.head) + tail).decode(errors="replace"), False
        tail = tail[-self.half :]
        marker = TRUNCATION_MARKER.format(n=dropped)
        return bytes(self.head).decode(errors="replace") + marker + tail.decode(errors="replace"), True


def _private_dir(container_key: str) -> Path:
    """A host dir of one container's own (its fixed /proc files, the empty layer of its overlays)."""
    d = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-{container_key}-"))
    os.chmod(d, 0o755)
    (d / "empty").mkdir()
    return d


def _has_socket(d: str) -> bool:
    try:
        return any(stat_mod.S_ISSOCK(e.stat(follow_symlinks=False).st_mode) for e in os.scandir(d))
    except OSError:
        return False


def _volumes(client, opts: DockerOptions, mounts: tuple[Mount, ...], private: Path, key: str):
    """Binds and overlay volumes for `mounts`: a read-only dir is seen through an overlay volume of
    this container's own (its own inodes: no lock or watch meets another container's); a writable
    one, a live one or one holding a socket (which an overlay cannot carry) is bound as it is."""
    import docker

    binds = {src: {"bind": dst, "mode": "ro"} for src, dst in
             procview.write_docker_files(str(private), opts.memory_mb).items()}
    volumes: list[str] = []
    specs = []
    for i, m in enumerate(mounts):
        if not m.read_only or m.live or not os.path.isdir(m.source) or _has_socket(m.source):
            binds[m.source] = {"bind": m.target, "mode": "ro" if m.read_only else "rw"}
            continue
        name = f"{LABEL}-{key}-{i}"
        client.volumes.create(name, driver="local", labels={LABEL: "1", PID_LABEL: str(os.getpid())},
                              driver_opts={"type": "overlay", "device": "overlay",
                                           "o": f"ro,lowerdir={private / 'empty'}:{m.source}"})
        volumes.append(name)
        specs.append(docker.types.Mount(m.target, name, type="volume", read_only=True))
    return binds, specs, volumes


_ACCOUNTS: dict[str, tuple[bytes, bytes]] = {}  # image -> its /etc/passwd and /etc/group


def _image_file(container, path: str) -> bytes:
    stream, _ = container.get_archive(path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        member = tar.next()
        f = tar.extractfile(member) if member is not None else None
        return f.read() if f is not None else b""


def _add_user(container, image: str, uid: int) -> None:
    """Name the container's own user in its /etc/passwd and /etc/group (tools look their user up)."""
    if image not in _ACCOUNTS:
        _ACCOUNTS[image] = (_image_file(container, "/etc/passwd"), _image_file(container, "/etc/group"))
    passwd, group = _ACCOUNTS[image]
    files = {"passwd": passwd.rstrip(b"\n") + f"\nsandbox:x:{uid}:{uid}:sandbox:/tmp:/bin/sh\n".encode(),
             "group": group.rstrip(b"\n") + f"\nsandbox:x:{uid}:\n".encode()}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    container.put_archive("/etc", buf.getvalue())


def container_user(container, opts: DockerOptions) -> tuple[int, int]:
    """The uid:gid commands of `container` run as: its own claimed one, or the configured one."""
    uid = (container.labels or {}).get(UID_LABEL)
    if uid:
        return int(uid), int(uid)
    if opts.user == "auto":
        raise SandboxError("the container has no user of its own")
    return _uid_gid(opts.user)


def start_container(client, opts: DockerOptions, mounts: tuple[Mount, ...] = ()):
    """Create and start one sandbox container (idle, no workspace yet) with `mounts` bound; raises SandboxError.

    Beyond the limits: host-wide /proc files replaced by fixed copies of its own or masked, no
    /sys, the refused system calls of `sdebench.sandbox.seccomp`."""
    container = None
    key = secrets.token_hex(4)
    private = _private_dir(key)
    volumes: list[str] = []
    uid = uids.claim() if opts.user == "auto" else None
    try:
        binds, specs, volumes = _volumes(client, opts, mounts, private, key)
        security = ["no-new-privileges"]
        if opts.seccomp:
            security.append("seccomp=" + seccomp.docker_profile())
        api = client.api
        host_config = api.create_host_config(
            binds=binds,
            mounts=specs or None,
            network_mode="none",
            mem_limit=f"{opts.memory_mb}m",
            memswap_limit=f"{opts.memory_mb}m",
            pids_limit=opts.pids_max,
            # Every dir the user may write in but the workspace is a tmpfs of its own: what a command
            # writes there never lands on the engine's disk (whose allocations every writer sees).
            tmpfs={**{d: f"rw,nosuid,nodev,size={opts.tmp_size_mb}m,mode=1777" for d in SCRATCH_DIRS},
                   "/sys": "ro,size=64k"},
            cap_drop=["ALL"],
            security_opt=security,
            nano_cpus=int(opts.cpus * 1e9) if opts.cpus else None,
        )
        host_config["MaskedPaths"] = procview.docker_masks()
        created = api.create_container(
            opts.image, ["sleep", "infinity"], detach=True, host_config=host_config,
            labels={LABEL: "1", PID_LABEL: str(os.getpid()), **({UID_LABEL: str(uid)} if uid else {})},
            environment={"PATH": SYSTEM_PATH}, hostname="sandbox",
        )
        container = client.containers.get(created["Id"])
        _OWNED[container.id] = (private, volumes, uid)
        if uid is not None:
            _add_user(container, opts.image, uid)
        container.start()
        return container
    except Exception as e:  # noqa: BLE001 - every engine failure becomes one clear error
        if container is not None:
            _remove(container)
        else:
            _drop(client, private, volumes, uid)
        raise SandboxError(f"cannot start a container from image {opts.image!r}: {_short(e)}") from None


class DockerSandbox:
    """A running container holding a copy of the workspace at /repo."""

    def __init__(self, client, workspace: Path, opts: DockerOptions, read_only: bool = False, container=None,
                 mounts: tuple[Mount, ...] = (), release=None):
        self.client = client
        self._release = release or _remove
        self.opts = opts
        self.workspace = Path(workspace).resolve()
        self.workdir = WORKDIR
        self.uid, self.gid = _uid_gid(opts.user)
        self.read_only = read_only
        self.container = container
        self.removal: threading.Thread | None = None
        self._dirty = False
        try:
            if self.container is None:
                self.container = start_container(client, opts, mounts)
            self.uid, self.gid = container_user(self.container, opts)
            self.user = f"{self.uid}:{self.gid}"
            self._put_tree(self.workspace)
        except SandboxError:
            self.close()
            raise
        except Exception as e:  # noqa: BLE001 - every engine failure becomes one clear error
            self.close()
            raise SandboxError(f"cannot copy the workspace into the container: {_short(e)}") from None

    # --- archives ------------------------------------------------------------------------
    def _tarinfo(self, name: str, kind: bytes, size: int = 0, mode: int = 0o644, rel: str | None = None) -> tarfile.TarInfo:
        """An archive entry `name`; `rel` is its workspace-relative path (default: `name`)."""
        info = tarfile.TarInfo(name)
        info.type, info.size, info.mode = kind, size, mode
        # Read-only: root owns the files, so the unprivileged user can write only below OUT_DIR.
        rel = name if rel is None else rel
        owned = not self.read_only or rel == OUT_DIR or rel.startswith(OUT_DIR + "/")
        info.uid, info.gid = (self.uid, self.gid) if owned else (0, 0)
        info.mtime = int(time.time())
        return info

    def _put_tree(self, root: Path) -> None:
        """Copy the host dir `root` to /repo (regular files and dirs only, owned by the user)."""
        # Archived straight from a safe walk (no link out of the workspace reaches it), in memory
        # unless it is large: one pass over the files and one round trip to the engine.
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as buf:
            self._write_tar(buf, root)
            size = buf.tell()
            buf.seek(0)
            # Bytes while small: handed a file, the HTTP client would ask for its fileno, which
            # moves a spooled file to disk.
            self.container.put_archive("/", buf.read() if size <= SPOOL_BYTES else buf)

    def _write_tar(self, buf, root: Path) -> None:
        """Write the safe entries of the host dir `root` as repo/... entries owned by the sandbox user."""
        top = ARCHIVE_ROOT
        walk = walk_tree(root, CopyReport(), skip_git=False, max_bytes=self.opts.max_workspace_mb * MIB)
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.addfile(self._tarinfo(top, tarfile.DIRTYPE, mode=0o755, rel=""))
            if self.read_only:
                tar.addfile(self._tarinfo(f"{top}/{OUT_DIR}", tarfile.DIRTYPE, mode=0o755, rel=OUT_DIR))
            for e in walk:
                if e.source is None:
                    if not (self.read_only and e.rel == OUT_DIR):
                        tar.addfile(self._tarinfo(f"{top}/{e.rel}", tarfile.DIRTYPE, mode=0o755, rel=e.rel))
                    continue
                with e.open() as fh:
                    size = os.fstat(fh.fileno()).st_size
                    mode = 0o755 if e.executable else 0o644
                    tar.addfile(self._tarinfo(f"{top}/{e.rel}", tarfile.REGTYPE, size, mode, rel=e.rel), fh)

    def _get_tar(self, path: str) -> tarfile.TarFile:
        """The archive of `path` in the container, spooled to a capped temp file."""
        stream, _ = self.container.get_archive(path)
        buf = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the returned TarFile's owner
        total = 0
        limit = self.opts.max_workspace_mb * MIB
        for chunk in stream:
            total += len(chunk)
            if total > limit:
                buf.close()
                raise SandboxError(f"workspace exceeds {self.opts.max_workspace_mb} MiB")
            buf.write(chunk)
        buf.seek(0)
        return tarfile.open(fileobj=buf, mode="r")

    # --- protocol ------------------------------------------------------------------------
    def exec(
        self, cmd: str | list[str], timeout: float = 60.0, env: dict[str, str] | None = None, watch: Watch | None = None
    ) -> ExecResult:
        """Run `cmd` in the container under `timeout -k`; output streamed and capped.

        With a `watch`, stdout is handed to it as it arrives and an expired watch kills every
        process of the container at once (its init dies), after which the container restarts."""
        if self.container is None:
            raise SandboxError("sandbox is closed")
        self._settle()
        inner = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        secs = max(1, int(round(timeout)))
        argv = ["timeout", "-k", str(KILL_GRACE_S), str(secs), *inner]
        full_env = base_env({"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": SYSTEM_PATH, **(env or {})})
        api = self.client.api
        start = time.monotonic()
        out, err = _Capture(self.opts.output_cap), _Capture(self.opts.output_cap)
        stopped = False
        try:
            ex = api.exec_create(
                self.container.id, argv, workdir=WORKDIR, environment=full_env, user=self.user
            )
            stream = api.exec_start(ex["Id"], stream=True, demux=True)
            if watch is None:
                _drain(stream, out, err, None)
            else:
                stopped = self._supervised(stream, out, err, watch, start + secs + KILL_GRACE_S + 5)
            code = None if stopped else api.exec_inspect(ex["Id"]).get("ExitCode")
        except SandboxError:
            raise
        except Exception as e:  # noqa: BLE001
            raise SandboxError(f"docker exec failed: {_short(e)}") from None
        if stopped:
            self._restart()
        else:
            # Leftover processes (daemons, fork-bomb orphans) are ended before the next command or
            # copy out, or with the container; not here, to spare a sandbox used for one command
            # (a grading phase) the engine round trip.
            self._dirty = True
        duration = time.monotonic() - start
        code = -1 if code is None else int(code)
        # 124: timeout sent TERM; 137: it had to KILL. Either way the time was up.
        timed_out = stopped or (code in (124, 137) and duration >= secs - 0.5)
        if timed_out:
            code = 124
        stdout, t1 = out.text()
        stderr, t2 = err.text()
        return ExecResult(code, stdout, stderr, timed_out, t1 or t2, duration, stopped)

    def _supervised(self, stream, out: _Capture, err: _Capture, watch: Watch, deadline: float) -> bool:
        """Read `stream` in a thread while polling `watch`; True when the command had to be stopped."""
        failure: list[BaseException] = []

        def read() -> None:
            try:
                _drain(stream, out, err, watch)
            except Exception as e:  # noqa: BLE001 - reported by the caller
                failure.append(e)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while reader.is_alive():
            reader.join(WATCH_POLL_S)
            if reader.is_alive() and (watch.expired() or time.monotonic() > deadline):
                with contextlib.suppress(Exception):
                    self.container.kill()
                reader.join(30)
                return True
        if failure:
            raise SandboxError(f"docker exec failed: {_short(failure[0])}")
        return False

    def _restart(self) -> None:
        """Start the container again after its processes were killed (files intact)."""
        try:
            with contextlib.suppress(Exception):
                self.container.wait(timeout=30)
            self.container.start()
            for _ in range(100):
                if self.container.exec_run(["true"], user=self.user).exit_code == 0:
                    return
                time.sleep(0.1)
        except Exception as e:  # noqa: BLE001
            raise SandboxError(f"cannot restart the container after stopping a command: {_short(e)}") from None
        raise SandboxError("the container did not come back after stopping a command")

    def _settle(self) -> None:
        if self._dirty and self.container is not None:
            self._dirty = False
            self._reap()

    def _processes(self) -> int:
        """How many processes run in the container (its init included)."""
        try:
            return len(self.client.api.top(self.container.id).get("Processes") or [])
        except ValueError:
            # Podman's Docker-compatible API (4.x, rootless on cgroup v1) answers `top` with an empty
            # body: count the container's pids from inside instead, less the counting process itself
            # The count runs where the submission's processes live: output it can garble (a full
            # process table, say) counts as "processes left", so the container is reset, never an error.
            out = (self.container.exec_run(["python3", "-c", COUNT_PIDS], user=self.opts.user).output or b"")[:32]
            text = out.decode("ascii", "replace").strip()
            return int(text) - 1 if text.isdigit() else 2

    def _reap(self) -> None:
        """End every process an exec left behind (daemons, fork-bomb orphans).

        Killing the container's init ends its whole pid namespace at once, which a racing fork
        bomb cannot outrun; the container then restarts with its files intact.
        """
        try:
            if self._processes() <= 1:
                return
            self.container.kill()
            self.container.wait(timeout=30)
            self.container.start()
            # The killed namespace's processes leave the pids cgroup asynchronously: wait until a
            # new process can start, or the next command would fail on a full process table.
            for _ in range(100):
                if self.container.exec_run(["true"], user=self.user).exit_code == 0:
                    return
                time.sleep(0.1)
            raise SandboxError("the container did not recover after a command flooded its process table")
        except SandboxError:
            raise
        except Exception as e:  # noqa: BLE001
            raise SandboxError(f"cannot reset the container after a command: {_short(e)}") from None

    def end_processes(self) -> None:
        """End, before returning, every process the last command left running (files stay as they are)."""
        if self.container is not None:
            self._settle()

    def read_file(self, rel: str) -> str:
        """Read a workspace file from the container."""
        path = posixpath.join(WORKDIR, _clean_rel(rel))
        try:
            tar = self._get_tar(path)
        except SandboxError:
            raise
        except Exception as e:  # noqa: BLE001
            raise FileNotFoundError(f"{rel}: {_short(e)}") from None
        with tar:
            for m in tar:
                if m.isfile():
                    return tar.extractfile(m).read().decode(errors="replace")
        raise FileNotFoundError(f"{rel}: not a regular file")

    def write_file(self, rel: str, content: str) -> None:
        """Write a workspace file into the container (parents created)."""
        rel = _clean_rel(rel)
        data = content.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            parts = rel.split("/")
            for i in range(1, len(parts)):
                tar.addfile(self._tarinfo("/".join(parts[:i]), tarfile.DIRTYPE, mode=0o755))
            tar.addfile(self._tarinfo(rel, tarfile.REGTYPE, len(data)), io.BytesIO(data))
        try:
            self.container.put_archive(WORKDIR, buf.getvalue())
        except Exception as e:  # noqa: BLE001
            raise SandboxError(f"cannot write {rel}: {_short(e)}") from None

    def sync_out(self, dest: Path) -> None:
        """Extract the container's /repo into the host dir `dest` (regular files, dirs, links)."""
        self._settle()
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with self._get_tar(WORKDIR + "/.") as tar:
            for m in tar:
                name = posixpath.normpath(m.name)
                parts = name.split("/")
                if parts[0] in (ARCHIVE_ROOT, "."):
                    parts = parts[1:]
                if not parts or posixpath.isabs(m.name) or ".." in parts:
                    continue
                out = dest.joinpath(*parts)
                if m.isdir():
                    out.mkdir(parents=True, exist_ok=True)
                elif m.isfile():
                    out.parent.mkdir(parents=True, exist_ok=True)
                    if out.is_symlink():
                        out.unlink()
                    with open(out, "wb") as fh:
                        fh.write(tar.extractfile(m).read())
                    os.chmod(out, 0o755 if m.mode & 0o111 else 0o644)
                elif m.issym():
                    # Kept as a link for the grader to judge; nothing on the host follows it.
                    out.parent.mkdir(parents=True, exist_ok=True)
                    if out.is_symlink() or out.exists():
                        continue
                    os.symlink(m.linkname, out)

    def close(self) -> None:
        """Remove the container (in the background: the caller does not wait for the engine);
        safe to call twice. `removal` is the removing thread; the factory's cleanup waits for it."""
        container, self.container = self.container, None
        if container is not None:
            self.removal = threading.Thread(target=self._release, args=(container,), daemon=True)
            self.removal.start()
            _REMOVALS.append(self.removal)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_REMOVALS: list[threading.Thread] = []  # background container removals of this process
_OWNED: dict[str, tuple[Path, list[str], int | None]] = {}  # container id -> private dir, volumes, user id


def _remove(container) -> None:
    """Remove a container, then its private dir and overlay volumes."""
    with contextlib.suppress(Exception):  # the factory's cleanup prunes what is left
        container.remove(force=True)
    private, volumes, uid = _OWNED.pop(container.id, (None, [], None))
    _drop(container.client, private, volumes, uid)


def _drop(client, private: Path | None, volumes: list[str], uid: int | None = None) -> None:
    if uid is not None:
        uids.release(uid)
    for name in volumes:
        with contextlib.suppress(Exception):
            client.volumes.get(name).remove(force=True)
    if private is not None:
        shutil.rmtree(private, ignore_errors=True)


def _owner_alive(labels: dict) -> bool:
    """True when the labels name another process that still runs (its cleanup is its own)."""
    owner = labels.get(PID_LABEL, "")
    return owner.isdigit() and int(owner) != os.getpid() and Path(f"/proc/{owner}").exists()


def wait_removals(timeout: float = 60.0) -> None:
    """Wait until the containers of closed sandboxes are removed."""
    while _REMOVALS:
        _REMOVALS.pop().join(timeout)


def _drain(stream, out: _Capture, err: _Capture, watch: Watch | None) -> None:
    for o, e in stream:
        if o:
            out.add(o)
            if watch is not None:
                watch.feed(o)
        if e:
            err.add(e)


def _short(e: Exception) -> str:
    text = getattr(e, "explanation", None) or str(e)
    return str(text).strip().splitlines()[0][:300] if str(text).strip() else type(e).__name__


def connect(timeout_s: int = 900):
    """A docker client that answers a ping; raises SandboxError with the reason otherwise."""
    try:
        import docker
    except ImportError:
        raise SandboxError("the docker SDK is not installed: pip install docker") from None
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
        return client
    except Exception as e:  # noqa: BLE001
        raise SandboxError(
            f"no Docker engine reachable ({_short(e)}); start dockerd or pick sandbox=local"
        ) from None


def limits_problem(client) -> str | None:
    """Why this engine would not enforce a container's memory and pids limits (None: it would).

    Rootless Podman on a cgroup v1 host ignores them (it says so only as a warning on its own CLI):
    a sandbox there would run without the limits the docker backend promises, so it is refused.
    """
    try:
        components = [str(c.get("Name", "")) for c in client.version().get("Components") or []]
        if not any("Podman" in name for name in components):
            return None
        info = client.api._result(client.api._get(client.api._url("/libpod/info")), json=True)
    except Exception:  # noqa: BLE001 - an engine that cannot say is taken at its word
        return None
    host = info.get("host") or {}
    if (host.get("security") or {}).get("rootless") and str(host.get("cgroupVersion")) == "v1":
        return ("rootless Podman on a cgroup v1 host ignores memory and pids limits; use cgroup v2 with a delegated "
                "user slice (docs/grading.md#podman), rootful Podman, Docker, or sandbox=local")
    return None


@dataclass
class DockerFactory:
    """Opens one container per sandbox from the configured image, `prestart` of them started ahead."""

    options: DockerOptions = field(default_factory=DockerOptions)
    name: str = "docker"

    def __post_init__(self) -> None:
        self.client = connect(self.options.client_timeout_s)
        problem = limits_problem(self.client)
        if problem:
            raise SandboxError(problem)
        try:
            self.client.images.get(self.options.image)
        except Exception:  # noqa: BLE001
            raise SandboxError(
                f"docker image {self.options.image!r} not found: build it with "
                f"`docker build -t {self.options.image} {DOCKERFILE_DIR}` or set sandbox.image"
            ) from None
        self._pool: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._filling = 0
        self._closed = False
        if self.options.prestart > 0:
            atexit.register(self._drain_pool)
            self._refill()

    def open(self, workspace: Path, read_only: bool = False, mounts: tuple[Mount, ...] = (),
             address_space_mb: int | None = None) -> DockerSandbox:
        """A container holding a copy of `workspace` (writable only below OUT_DIR when `read_only`);
        containers have no per-process address-space cap, so `address_space_mb` changes nothing.

        A container started ahead of need is used when there is one; one with `mounts` (bound at
        creation) is always started afresh. Its replacement is started when the sandbox closes."""
        if mounts:
            return DockerSandbox(self.client, workspace, self.options, read_only, None, mounts, self._release)
        container = None
        with contextlib.suppress(queue.Empty):
            container = self._pool.get_nowait()
        return DockerSandbox(self.client, workspace, self.options, read_only, container, release=self._release)

    def _release(self, container) -> None:
        """Remove a closed sandbox's container, then start its replacement (a background thread)."""
        _remove(container)
        if self.options.prestart > 0:
            self._refill()

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until closed sandboxes' containers are removed and the pre-started ones are up.

        The episode loop never waits for this (the agent's next turn overlaps it); a benchmark
        does, so that the engine's background work is not charged to whatever it times next."""
        wait_removals(timeout)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if self._filling == 0:
                    return
            time.sleep(0.02)

    def _refill(self) -> None:
        """Start containers in the background until `prestart` are ready or being started."""
        with self._lock:
            missing = self.options.prestart - self._pool.qsize() - self._filling
            if self._closed or missing <= 0:
                return
            self._filling += missing
        for _ in range(missing):
            threading.Thread(target=self._start_one, daemon=True).start()

    def _start_one(self) -> None:
        container = None
        try:
            container = start_container(self.client, self.options)
        except SandboxError:
            pass  # open() starts its own and reports the reason
        finally:
            with self._lock:
                self._filling -= 1
                keep = container is not None and not self._closed
                if keep:
                    self._pool.put(container)
        if container is not None and not keep:
            with contextlib.suppress(Exception):
                container.remove(force=True)

    def _drain_pool(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                c = self._pool.get_nowait()
            except queue.Empty:
                return
            with contextlib.suppress(Exception):
                c.remove(force=True)

    def cleanup(self) -> None:
        """Remove pre-started containers, and labelled ones of this process and of processes that no longer run."""
        self._drain_pool()
        wait_removals()
        try:
            found = self.client.containers.list(all=True, filters={"label": f"{LABEL}=1"})
        except Exception:  # noqa: BLE001 - cleanup is best effort
            found = []
        for c in found:
            if not _owner_alive(c.labels):
                _remove(c)  # one that is already going must not stop the rest: _remove never raises
        try:
            vols = self.client.volumes.list(filters={"label": f"{LABEL}=1"})
        except Exception:  # noqa: BLE001
            vols = []
        for v in vols:
            if not _owner_alive(v.attrs.get("Labels") or {}):
                with contextlib.suppress(Exception):
                    v.remove(force=True)
        for d in Path(tempfile.gettempdir()).glob(PRIVATE_PREFIX + "*"):
            owner = d.name[len(PRIVATE_PREFIX):].split("-", 1)[0]
            alive = owner.isdigit() and int(owner) != os.getpid() and Path(f"/proc/{owner}").exists()
            if not alive and d.name not in {p.name for p, _, _ in _OWNED.values()}:
                shutil.rmtree(d, ignore_errors=True)
        uids.prune()
        with self._lock:
            self._closed = False  # the factory stays usable; the next sandbox closed refills


def options_from(cfg: dict) -> DockerOptions:
    """DockerOptions from a config dict; unknown keys raise SandboxError naming them."""
    known = set(DockerOptions.__dataclass_fields__)
    extra = sorted(set(cfg) - known)
    if extra:
        raise SandboxError(f"unknown sandbox.docker option(s): {', '.join(extra)}")
    return DockerOptions(**cfg)


def unavailable_reason(image: str) -> str | None:
    """Why `sandbox=docker` with `image` cannot run here, or None when it can."""
    try:
        DockerFactory(DockerOptions(image=image, client_timeout_s=30, prestart=0))
    except SandboxError as e:
        return str(e)
    return None
