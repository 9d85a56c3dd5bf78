"""Exclusive claims without `flock`: a lease file its holder keeps renewing (`claims=lease`).

Some shared filesystems lock only within one node (Lustre with `localflock`, BeeGFS without global
locks), so an `flock` claim there would let two nodes run one episode. A lease needs only what every
shared filesystem does atomically on its server: an exclusive create, a hard link and a rename.

- **Take**: create the lease file with O_CREAT|O_EXCL (one creator succeeds) and write the holder
  into it: host, pid namespace, pid, the process's start time, a nonce and the renewal time.
- **Renew**: a heartbeat thread of the holder rewrites the renewal time every `lease_s / 6` s, in
  place through its own descriptor, and fsyncs it (other nodes see it on their next open).
- **Release**: unlink the file, if it is still the holder's.
- **Stale**: a lease not renewed for `lease_s` seconds, or whose holder ran in this host's pid
  namespace and is gone, is taken over. The taker hard-links the stale file to a private name: the
  link count then tells whether another taker holds such a link too, so of many racing takers at
  most one sees exactly two names while the stale file is still at the lease's path (checked after
  the count: a winner's rename leaves two takers' links on the old file), checks that the file is
  still the stale one it read, and renames a fresh lease of its own over it. The others back off.

The machines' clocks must agree to well within `lease_s` (NTP does). A holder that cannot renew for
`lease_s` (a stopped process, a partitioned node) loses its lease; it notices at its next renewal
and logs a warning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("sdebench.run")

LEASE_S = 60.0  # default seconds without renewal after which a lease is stale
CLAIM_MODES = ("flock", "lease")


@dataclass(frozen=True)
class ClaimMode:
    """How episodes are claimed: `flock` (default) or `lease` with its staleness limit in seconds."""

    kind: str = "flock"
    lease_s: float = LEASE_S

    @classmethod
    def of(cls, claims: Any = "flock", raw: Any = LEASE_S) -> ClaimMode:
        """The claim mode a run config asks for (its `claims`, `claim_lease_s`); ValueError (one line) if bad."""
        kind = str(getattr(claims, "value", claims or "flock"))  # the schema's enum, or a plain string
        if kind not in CLAIM_MODES:
            raise ValueError(f"claims must be one of {', '.join(CLAIM_MODES)}, got {kind!r}")
        try:
            lease_s = float(raw)
        except (TypeError, ValueError):
            lease_s = -1.0
        if not lease_s > 0:
            raise ValueError(f"claim_lease_s must be a number of seconds > 0, got {raw!r}")
        return cls(kind, lease_s)
SIZE = 512  # every write of a lease file has this length: a renewal overwrites the whole content


def _start_time(pid: int) -> str:
    """The start time of process `pid` in clock ticks since boot ("" if unknown): tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]  # field 22; the command name may hold spaces


def _pid_ns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _holder() -> dict[str, Any]:
    return {"host": socket.gethostname(), "ns": _pid_ns(), "pid": os.getpid(), "start": _start_time(os.getpid())}


def _alive(info: dict[str, Any]) -> bool:
    """Whether the holder named in `info` may still run (True unless it provably ran here and is gone)."""
    if info.get("host") != socket.gethostname() or not info.get("ns") or info.get("ns") != _pid_ns():
        return True  # another machine or container: only the renewal time can tell
    pid = info.get("pid")
    if not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    start = _start_time(pid)
    return not (start and info.get("start") and start != info["start"])


@dataclass(frozen=True)
class Seen:
    """A lease file as read: its inode, its content (None if empty or torn) and its mtime."""

    ino: int
    info: dict[str, Any] | None
    mtime: float

    def stale(self, lease_s: float) -> bool:
        """Whether its holder has not renewed it for `lease_s` seconds or is known to be gone."""
        renewed = self.info.get("renewed") if self.info else None
        if not isinstance(renewed, int | float):
            renewed = self.mtime  # being written, or torn: judged by when it was last written
        if time.time() - renewed > lease_s:
            return True
        return self.info is not None and not _alive(self.info)


def read(path: Path) -> Seen | None:
    """The lease file at `path` as it stands, or None if there is none."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            raw = f.read(SIZE * 2)
    except FileNotFoundError:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        info = None
    return Seen(st.st_ino, info if isinstance(info, dict) else None, st.st_mtime)


class Lease:
    """A lease this process holds on `path`, renewed by a heartbeat thread until `release()`."""

    def __init__(self, path: Path, fd: int, lease_s: float, start: bool = True):
        self.path, self.fd, self.lease_s = path, fd, lease_s
        self.nonce = uuid.uuid4().hex
        self.holder = _holder()
        self.lost = False
        self._stop = threading.Event()
        self._write()
        self._thread = threading.Thread(target=self._beat, name=f"sdebench-lease-{path.name}", daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        """Start the heartbeat (once the file is in place at `path`)."""
        self._thread.start()

    def _write(self) -> None:
        body = json.dumps({**self.holder, "nonce": self.nonce, "renewed": round(time.time(), 3)}).encode()
        os.pwrite(self.fd, body.ljust(SIZE - 1) + b"\n", 0)
        os.fsync(self.fd)  # an NFS client would otherwise keep the renewal to itself until close

    def mine(self) -> bool:
        """Whether the file at `path` is still this lease (not taken over as stale)."""
        try:
            return os.stat(self.path).st_ino == os.fstat(self.fd).st_ino
        except FileNotFoundError:
            return False

    def renew(self) -> bool:
        """Write a fresh renewal time; False once the lease is lost."""
        if not self.lost:
            self._write()
            if not self.mine():
                self.lost = True
                log.warning("%s: lease lost (not renewed for %g s, taken over)", self.path, self.lease_s)
        return not self.lost

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 6):
            try:
                if not self.renew():
                    return
            except OSError as e:  # a filesystem hiccup: the next beat tries again
                log.warning("%s: cannot renew the lease: %s", self.path, e)

    def release(self) -> None:
        """Stop renewing and remove the lease file (unless it was taken over)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        try:
            if self.mine():
                self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)


def _create(path: Path, lease_s: float) -> Lease | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return None
    try:
        return Lease(path, fd, lease_s)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise


def _private(path: Path, kind: str) -> Path:
    # hidden like the lease; the time in the name lets a later taker remove one a crashed taker left
    return path.with_name(f"{path.name}.{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:8]}.{int(time.time())}.{kind}")


def _remove_abandoned(path: Path, lease_s: float) -> None:
    """Remove takers' files for `path` older than `lease_s`: a crashed taker's link would block every takeover."""
    for p in [*path.parent.glob(f"{path.name}.*.take"), *path.parent.glob(f"{path.name}.*.new")]:
        try:
            if time.time() - int(p.name.split(".")[-2]) > lease_s:
                p.unlink(missing_ok=True)
        except (ValueError, IndexError):
            continue


def _take_over(path: Path, seen: Seen, lease_s: float) -> Lease | None:
    """Replace the stale lease `seen` by one of this process's; None if another taker won or it came alive."""
    mark = _private(path, "take")
    try:
        os.link(path, mark)
    except FileNotFoundError:
        return None
    try:
        st = os.stat(mark)  # right after our link: the count then says whether another taker links it too
        if st.st_ino != seen.ino:
            return None  # replaced or released since it was read
        if st.st_nlink != 2:
            _remove_abandoned(path, lease_s)
            return None
        # Two names may also be two takers' links after a winner renamed its lease over `path` (and
        # before it removed its own link): the stale file must still be the one at `path`, read after
        # the count (a rename after this read came from a taker that counted before our link: three).
        try:
            if os.stat(path).st_ino != seen.ino:
                return None
        except FileNotFoundError:
            return None
        again = read(mark)
        if again is None or again.ino != seen.ino or not again.stale(lease_s):
            return None  # renewed meanwhile: its holder lives
        new = _private(path, "new")
        fd = os.open(new, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            lease = Lease(path, fd, lease_s, start=False)  # written and fsynced before it is put in place
        except BaseException:
            os.close(fd)
            new.unlink(missing_ok=True)
            raise
        try:
            os.rename(new, path)
        except BaseException:
            lease.release()  # not in place: it leaves the stale file alone
            new.unlink(missing_ok=True)
            raise
        lease.start()
        log.info("%s: took over a stale lease (holder %s)", path, _who(seen))
        return lease
    finally:
        mark.unlink(missing_ok=True)


def _who(seen: Seen) -> str:
    i = seen.info or {}
    return f"{i.get('host', '?')} pid {i.get('pid', '?')}"


def try_take(path: Path, lease_s: float = LEASE_S) -> Lease | None:
    """Take the lease on `path` if nobody holds it or its holder's lease is stale; None if it is held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(3):  # the file may vanish (released) between a failed create and its read
        lease = _create(path, lease_s)
        if lease is not None:
            return lease
        seen = read(path)
        if seen is None:
            continue
        if not seen.stale(lease_s):
            return None
        return _take_over(path, seen, lease_s)
    return None


def take(path: Path, lease_s: float = LEASE_S, poll_s: float = 0.5) -> Lease:
    """Take the lease on `path`, waiting while another holder keeps it fresh."""
    while (lease := try_take(path, lease_s)) is None:
        time.sleep(poll_s)
    return lease


@contextlib.contextmanager
def held(path: Path, lease_s: float = LEASE_S, poll_s: float = 0.05) -> Iterator[Lease]:
    """Hold the lease on `path` for the body of a `with` (a short critical section: the budget ledger)."""
    lease = take(path, lease_s, poll_s)
    try:
        yield lease
    finally:
        lease.release()
