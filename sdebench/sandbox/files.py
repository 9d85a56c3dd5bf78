"""Host-side file handling of workspaces that an untrusted process has written.

A workspace may hold symlinks pointing anywhere on the host, FIFOs that block a reader, or
huge files. Paths are resolved strictly inside the workspace, and copies never follow a link
out of it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

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


@dataclass(frozen=True)
class Entry:
    """One entry of a safe walk: a directory (`source` None) or a regular file read from `source`."""

    rel: str
    source: Path | None = None
    executable: bool = False

    def open(self) -> BinaryIO:
        """The file opened for reading; refuses a source swapped for a link since it was walked."""
        # O_NOFOLLOW: the entry was a regular file at lstat time; refuse if it was swapped for a link.
        return os.fdopen(os.open(self.source, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def walk_tree(
    src: Path,
    report: CopyReport,
    *,
    skip_git: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> Iterator[Entry]:
    """The entries of workspace `src` that a copy keeps, parents first, never following a link out of it.

    A symlink to a regular file inside `src` becomes that file; every other symlink, FIFO, socket
    or device is dropped and noted in `report`. `.git` entries are skipped when `skip_git`.
    Raises SandboxError when the workspace exceeds `max_bytes` or `max_files`.
    """
    src = Path(src).resolve()
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(src)
        if rel_dir.parts:
            yield Entry(rel_dir.as_posix())
        keep_dirs = []
        for name in sorted(dirnames):
            p = here / name
            if skip_git and name == ".git":
                continue
            if p.is_symlink():
                yield from _link(src, p, (rel_dir / name).as_posix(), report, max_bytes, max_files)
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
                yield from _link(src, p, rel, report, max_bytes, max_files)
            elif stat.S_ISREG(st.st_mode):
                yield _file(p, rel, st, report, max_bytes, max_files)
            else:
                report.notes.append(f"dropped special file {rel}")


def copy_tree(
    src: Path,
    dest: Path,
    *,
    skip_git: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> CopyReport:
    """Copy the workspace `src` into `dest` without following any link out of it (see walk_tree)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    report = CopyReport()
    for e in walk_tree(src, report, skip_git=skip_git, max_bytes=max_bytes, max_files=max_files):
        out = dest / e.rel
        if e.source is None:
            out.mkdir(exist_ok=True)
            continue
        with e.open() as fin, open(out, "wb") as fout:
            shutil.copyfileobj(fin, fout)
        os.chmod(out, 0o755 if e.executable else 0o644)
    return report


def _file(p: Path, rel: str, st: os.stat_result, report: CopyReport, max_bytes: int, max_files: int) -> Entry:
    report.files += 1
    report.bytes += st.st_size
    if report.bytes > max_bytes:
        raise SandboxError(f"workspace exceeds {max_bytes // (1024 * 1024)} MiB")
    if report.files > max_files:
        raise SandboxError(f"workspace exceeds {max_files} files")
    return Entry(rel, p, bool(st.st_mode & 0o111))


def _link(src: Path, p: Path, rel: str, report: CopyReport, max_bytes: int, max_files: int) -> Iterator[Entry]:
    try:
        target = p.resolve(strict=True)
    except (OSError, RuntimeError):
        report.notes.append(f"dropped dangling or looping symlink {rel}")
        return
    if not target.is_relative_to(src):
        report.notes.append(f"dropped symlink {rel} pointing outside the workspace")
        return
    if target.is_file() and not any(part == ".git" for part in target.relative_to(src).parts):
        yield _file(target, rel, target.stat(), report, max_bytes, max_files)
        report.notes.append(f"replaced symlink {rel} by a copy of its target")
        return
    report.notes.append(f"dropped symlink {rel} to a directory")
