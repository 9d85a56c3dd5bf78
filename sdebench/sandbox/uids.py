"""A host user id of its own for every sandbox.

The kernel keeps some accounts per user, host-wide and in no namespace: inotify instances and
watches, pipe buffer pages, epoll watches, pending signals, process counts. Two sandboxes running
as the same host user share those quotas, and one can signal the other by using up a quota (128
inotify instances: the other's next `inotify_init` fails or not). Each sandbox therefore runs as a
user id claimed for it alone, from a range no account uses, and released when it closes.

A claim is a file named by the id in a dir of the host's temp dir, created exclusively: two
processes never hold the same id. Claims of processes that no longer run are pruned.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import tempfile
from pathlib import Path

FIRST = 1_500_000_000  # far above system accounts, login users and the usual subordinate-id ranges
COUNT = 1 << 24
CLAIMS = "sdb-uids"
_HELD: set[int] = set()  # this process's claims, released at exit if a sandbox was never closed


def claims_dir() -> Path:
    """Where the claims live (made on first use, readable by root only)."""
    d = Path(tempfile.gettempdir()) / CLAIMS
    d.mkdir(mode=0o700, exist_ok=True)
    return d


def claim() -> int:
    """A user id no other open sandbox of this host holds."""
    d = claims_dir()
    for _ in range(1000):
        uid = FIRST + secrets.randbelow(COUNT)
        try:
            fd = os.open(d / str(uid), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        _HELD.add(uid)
        return uid
    raise RuntimeError("no free sandbox user id")  # a million claims at once: a leak, not a load


def release(uid: int) -> None:
    """Give `uid` back; safe to call twice."""
    _HELD.discard(uid)
    with contextlib.suppress(FileNotFoundError):
        (claims_dir() / str(uid)).unlink()


@atexit.register
def _release_held() -> None:
    for uid in list(_HELD):
        release(uid)


def prune() -> int:
    """Drop claims of processes that no longer run; return how many."""
    removed = 0
    for p in claims_dir().iterdir():
        try:
            owner = p.read_text().strip()
        except OSError:
            continue
        if not (owner.isdigit() and Path(f"/proc/{owner}").exists()):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed += 1
    return removed


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give `root` and everything below it (links themselves, never their targets) to uid:gid."""
    os.lchown(root, uid, gid)
    for d, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                os.lchown(os.path.join(d, name), uid, gid)
