"""Where the host writes short-lived workspaces (validation trees, the repo a task is built in).

A task's validation writes its tree three times and builds its repo once: at 2,000 commits that is
over a thousand files created and removed per task. On a disk-backed temp dir each creation costs
the kernel ~0.5 ms (journal and block allocation), more than the test runs' own work on the files;
in memory it costs a fiftieth of that. So scratch dirs go to `/dev/shm` (the in-memory filesystem
Linux mounts there) when it is writable and has room, unless the user chose a temp dir with
`TMPDIR`; otherwise to the usual temp dir. What is written, and so what is tested, is the same.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SHM = Path("/dev/shm")
MIN_FREE = 512 << 20  # bytes free in SHM below which it is not used (a large task needs ~20 MB)


def scratch_root(shm: Path = SHM, min_free: int = MIN_FREE) -> str | None:
    """The dir scratch dirs go in: `shm` if usable, else None (the default temp dir)."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        st = os.statvfs(shm)
    except OSError:
        return None
    if not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)) or st.f_bavail * st.f_frsize < min_free:
        return None
    return str(shm)


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory:
    """A temporary dir for a short-lived workspace (removed when the context ends)."""
    return tempfile.TemporaryDirectory(prefix=prefix, dir=scratch_root())
