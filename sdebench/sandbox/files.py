"""Host-side file handling of workspaces that an untrusted process has written.

A workspace may hold symlinks pointing anywhere on the host, FIFOs that block a reader, or
huge files. Paths are resolved strictly inside the workspace, and copies never follow a link
out of it.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from sdebench.sandbox.base import SandboxError

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_FILES = 100_000


def resolve_inside(root: Path, rel: str) -> Path:
    """The host path of workspace-relative `rel`; raises SandboxError if it leaves `root`."""
    root = Path(root).resolve()
    if os.path.isabs(rel):
        raise SandboxError(f"path {rel!r} must be relative to the workspace")
    path = (root / rel).resolve()
    if path != root and not path.is_relative_to(root):
        raise SandboxError(f"path {rel!r} points outside the workspace")
    return path


@dataclass
class CopyReport:
    """What a workspace copy did besides copying regular files."""

    files: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)


def copy_tree(
    src: Path,
    dest: Path,
    *,
    skip_git: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> CopyReport:
    """Copy the workspace `src` into `dest` without following any link out of it.

    A symlink to a regular file inside `src` becomes a copy of that file; every other symlink,
    FIFO, socket or device is dropped and noted. `.git` entries are skipped when `skip_git`.
    Raises SandboxError when the workspace exceeds `max_bytes` or `max_files`.
    """
    src = Path(src).resolve()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    report = CopyReport()
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(src)
        out_dir = dest / rel_dir
        out_dir.mkdir(exist_ok=True)
        keep_dirs = []
        for name in sorted(dirnames):
            p = here / name
            if skip_git and name == ".git":
                continue
            if p.is_symlink():
                _link(src, p, out_dir / name, (rel_dir / name).as_posix(), report, max_bytes, max_files)
            else:
                keep_dirs.append(name)
        dirnames[:] = keep_dirs
        for name in sorted(filenames):
            if skip_git and name == ".git":
                continue
            p = here / name
            rel = (rel_dir / name).as_posix()
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                _link(src, p, out_dir / name, rel, report, max_bytes, max_files)
            elif stat.S_ISREG(st.st_mode):
                _copy_file(p, out_dir / name, st.st_size, report, max_bytes, max_files)
            else:
                report.notes.append(f"dropped special file {rel}")
    return report


def _copy_file(p: Path, out: Path, size: int, report: CopyReport, max_bytes: int, max_files: int) -> None:
    report.files += 1
    report.bytes += size
    if report.bytes > max_bytes:
        raise SandboxError(f"workspace exceeds {max_bytes // (1024 * 1024)} MiB")
    if report.files > max_files:
        raise SandboxError(f"workspace exceeds {max_files} files")
    # O_NOFOLLOW: the entry was a regular file at lstat time; refuse if it was swapped for a link.
    fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fin, open(out, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    os.chmod(out, 0o755 if os.stat(p, follow_symlinks=False).st_mode & 0o111 else 0o644)


def _link(
    src: Path, p: Path, out: Path, rel: str, report: CopyReport, max_bytes: int, max_files: int
) -> None:
    try:
        target = p.resolve(strict=True)
    except (OSError, RuntimeError):
        report.notes.append(f"dropped dangling or looping symlink {rel}")
        return
    if not target.is_relative_to(src):
        report.notes.append(f"dropped symlink {rel} pointing outside the workspace")
        return
    if target.is_file() and not any(part == ".git" for part in target.relative_to(src).parts):
        _copy_file(target, out, target.stat().st_size, report, max_bytes, max_files)
        report.notes.append(f"replaced symlink {rel} by a copy of its target")
        return
    report.notes.append(f"dropped symlink {rel} to a directory")
