"""Deterministic synthetic git repos: build from commits, bundle, unbundle, squash, read history.

Repos are written with `git fast-import` (one process, any number of commits) using a fixed
author and fixed timestamps, so the same commits always yield the same SHAs and bundle bytes.
They are read with gitpython: commits, messages and per-file diffs for the memory corpus, trees
and file contents for the deliveries and the grader (one `git cat-file --batch` per open repo
instead of a process per file). Plumbing checks (all objects, every ref), patches, commits and
worktree diffs run `git` itself.
"""

from __future__ import annotations

from sdebench.errors import SdebenchError

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdebench.tasks.commits import Commit

AUTHOR = "Dev Team <dev@example.invalid>"
EPOCH = 1_700_000_000  # fixed base time; commit i is EPOCH + i * STEP
STEP = 3_600
BRANCH = "main"

# Environment for every git call: no user or system config may change object bytes.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Dev Team",
    "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "Dev Team",
    "GIT_COMMITTER_EMAIL": "dev@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
    # glibc's malloc otherwise hands the heap back after every object fast-import deflates and
    # grows it again for the next (zlib's state is ~256 KiB): on a history of thousands of commits
    # that churn was half of fast-import's CPU. Allocation only: objects and packs are unchanged.
    "MALLOC_TRIM_THRESHOLD_": str(64 << 20),
}


class RepoError(SdebenchError, RuntimeError):
    """A git operation on a task repo failed."""


def _git(path: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run git in `path` with the fixed environment and return stdout."""
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(
        ["git", "-c", "core.autocrlf=false", "-c", "pack.threads=1", *args],
        cwd=path,
        input=input,
        capture_output=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RepoError(f"git {' '.join(args)} failed in {path}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _data(blob: bytes) -> bytes:
    return b"data %d\n" % len(blob) + blob + b"\n"


def fast_import_stream(commits: Sequence[Commit], branch: str = BRANCH) -> bytes:
    """The `git fast-import` stream that builds `commits` in order on `branch`."""
    out = bytearray()
    for i, commit in enumerate(commits):
        when = EPOCH + i * STEP
        out += b"commit refs/heads/%s\n" % branch.encode()
        out += b"mark :%d\n" % (i + 1)
        out += b"author %s %d +0000\n" % (AUTHOR.encode(), when)
        out += b"committer %s %d +0000\n" % (AUTHOR.encode(), when)
        out += _data(commit.message.encode())
        if i > 0:
            out += b"from :%d\n" % i
        for path in sorted(commit.files):
            content = commit.files[path]
            if content is None:
                out += b"D %s\n" % path.encode()
            else:
                out += b"M 100644 inline %s\n" % path.encode() + _data(content.encode())
        out += b"\n"
    return bytes(out)


def build(path: Path, commits: Sequence[Commit]) -> str:
    """Create a repo at `path` holding `commits` on main, checked out; return the HEAD sha."""
    if not commits:
        raise RepoError("a repo needs at least one commit")
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", BRANCH)
    _git(path, "fast-import", "--quiet", "--done", input=fast_import_stream(commits) + b"done\n")
    _git(path, "checkout", "-q", "-f", BRANCH)
    return head_sha(path)


@contextmanager
def _open(path: Path) -> Iterator[Any]:
    """A gitpython handle on the repo at `path`, its git calls under the fixed environment; closed after use."""
    import git  # gitpython costs ~0.15 s to import: only commands that read repos pay for it

    try:
        r = git.Repo(path)
    except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError) as e:
        raise RepoError(f"not a git repo: {e}") from None
    r.git.update_environment(**GIT_ENV)
    try:
        yield r
    except (git.exc.GitError, ValueError) as e:
        raise RepoError(f"reading {path} failed: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}") from None
    finally:
        r.close()


def head_sha(path: Path) -> str:
    """The sha of HEAD in the repo at `path`."""
    # One git call: opening the repo with gitpython would first import it (~0.15 s of CPU).
    return _git(path, "rev-parse", "--verify", "HEAD^{commit}").decode().strip()


def bundle(path: Path, out: Path) -> None:
    """Write the main branch of the repo at `path` (full history) as a git bundle.

    The bundle carries HEAD too, so a plain `git clone repo.bundle` checks out main; HEAD must
    therefore be main.
    """
    try:
        head = _git(path, "symbolic-ref", "-q", "HEAD").decode().strip()
    except RepoError:
        head = ""  # detached
    if head != f"refs/heads/{BRANCH}":
        raise RepoError(f"{path}: HEAD is {head or 'detached'}, not {BRANCH}: the bundle would check out the wrong tree")
    _git(path, "bundle", "create", "-q", str(out.resolve()), "HEAD", BRANCH)


def unbundle(bundle_path: Path, dest: Path) -> Path:
    """Clone a bundle into `dest` with main checked out and nothing left that names the bundle."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _git(dest.parent, "clone", "-q", "-b", BRANCH, str(bundle_path.resolve()), str(dest.resolve()))
    neutralize(dest)
    return dest


# Files of a .git dir that record where a clone came from or what was done in it.
TRACE_FILES = ("FETCH_HEAD", "ORIG_HEAD", "description")


def neutralize(path: Path) -> None:
    """Remove every trace of the repo's origin from `path/.git`: remotes, reflogs (a clone's first
    entry is `clone: from <bundle path>`), FETCH_HEAD and ORIG_HEAD; objects and refs stay."""
    for remote in _git(path, "remote").decode().split():
        _git(path, "remote", "remove", remote)
    git_dir = path / ".git"
    shutil.rmtree(git_dir / "logs", ignore_errors=True)
    for name in TRACE_FILES:
        (git_dir / name).unlink(missing_ok=True)


def squash(src: Path, dest: Path, drop: Iterable[str] = (), message: str = "Initial commit") -> str:
    """Copy the working tree of `src` (minus `drop` paths) into a fresh single-commit repo at `dest`.

    The new repo has one branch, one commit, no tags, reflog, stash, remotes or other objects.
    """
    dropped = {p.rstrip("/") for p in drop}
    files = {}
    for rel in tracked_files(src):
        if any(rel == d or rel.startswith(d + "/") for d in dropped):
            continue
        files[rel] = (src / rel).read_text()
    if dest.exists():
        shutil.rmtree(dest)
    sha = build(dest, [Commit(message, files)])
    neutralize(dest)
    return sha


def _blobs(tree: Any) -> list[Any]:
    return [b for b in tree.traverse() if b.type == "blob"]


def tracked_files(path: Path, rev: str = "HEAD") -> list[str]:
    """Paths tracked at `rev`, sorted."""
    with _open(path) as r:
        return sorted(b.path for b in _blobs(r.commit(rev).tree))


def show_file(path: Path, rev: str, rel: str) -> str:
    """The content of `rel` at `rev`."""
    with _open(path) as r:
        try:
            blob = r.commit(rev).tree / rel
        except KeyError:
            raise RepoError(f"{rel} is not tracked at {rev} in {path}") from None
        return blob.data_stream.read().decode()


@dataclass(frozen=True)
class HistoryCommit:
    """One commit as memory sees it: sha, message, per-file diffs and its committer date."""

    sha: str
    message: str
    diffs: dict[str, str]  # path -> unified diff body (headers stripped)
    date: str = ""  # committer date, ISO 8601 (`git log --format=%cI`)


def history(path: Path) -> list[HistoryCommit]:
    """Every commit reachable from HEAD, oldest first, with per-file diffs (3 lines of context, no rename detection).

    One `git log -p` for the whole history (a diff process per commit costs minutes on a history
    of thousands); the root commit is shown against the empty tree.
    """
    return parse_history(_git(path, *HISTORY_ARGS))


_COMMIT_MARK = "\x01sdebench-commit\x01"
# The one `git log` that reads a history as memory (here, and by an agent through its shell).
HISTORY_ARGS = ("-c", "core.quotePath=false", "log", "--reverse", "--no-renames", "--no-color", "-p", "-U3",
                "--no-ext-diff", "--root", "--format=%x01sdebench-commit%x01%H%x00%cI%x00%B%x00", "HEAD")


def parse_history(out: bytes) -> list[HistoryCommit]:
    """The commits of the output of `git HISTORY_ARGS`, oldest first."""
    commits = []
    for record in out.split(_COMMIT_MARK.encode())[1:]:
        sha, when, message, patch = record.split(b"\0", 3)
        commits.append(HistoryCommit(sha.decode(), message.decode(errors="replace").rstrip("\n"), _file_diffs(patch),
                                     when.decode().strip()))
    return commits


_DIFF_HEADER = re.compile(rb"^diff --git a/(.*) b/(.*)$", re.M)


def _file_diffs(patch: bytes) -> dict[str, str]:
    """Path -> diff body of each file in one commit's `git log -p` output."""
    diffs = {}
    heads = list(_DIFF_HEADER.finditer(patch))
    for n, m in enumerate(heads):
        chunk = patch[m.end():heads[n + 1].start() if n + 1 < len(heads) else len(patch)]
        # The body starts after the `+++` line (a file with no hunks, e.g. empty, has none).
        plus = re.search(rb"^\+\+\+ [^\n]*\n?", chunk, re.M)
        body = chunk[plus.end():] if plus else b""
        diffs[m.group(2).decode()] = diff_body(body)
    return diffs


def diff_body(patch: bytes | str) -> str:
    """One file's patch text (its hunks) with the line numbers taken out of the hunk headers.

    Hunk headers keep their function context but lose their line numbers: numbers such as
    `@@ -26,3 +26,11 @@` are positions, not content, and must not read as facts to a search.
    """
    text = patch.decode(errors="replace") if isinstance(patch, bytes) else patch
    return "\n".join(_HUNK.sub("@@", line, count=1) if line.startswith("@@") else line for line in text.splitlines())


_HUNK = re.compile(r"^@@ -\S+ \+\S+ @@")


def all_objects(path: Path) -> set[str]:
    """Every object sha stored in the repo, reachable or not."""
    out = _git(path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").decode()
    return set(out.split())


def refs(path: Path) -> list[str]:
    """Every ref name in the repo (branches, tags, stash, remotes)."""
    out = _git(path, "for-each-ref", "--format=%(refname)").decode()
    return [r for r in out.split() if r]


def blob_sha(content: str) -> str:
    """The git blob sha of `content`."""
    return _git(Path.cwd(), "hash-object", "--stdin", input=content.encode()).decode().strip()


def apply_patch(workdir: Path, patch: str) -> None:
    """Apply a unified diff to a working tree (not the index)."""
    if not patch.strip():
        return
    proc = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"],
        cwd=workdir,
        input=patch.encode(),
        capture_output=True,
        env={**os.environ, **GIT_ENV},
        check=False,
    )
    if proc.returncode != 0:
        raise RepoError(f"patch does not apply in {workdir}: {proc.stderr.decode(errors='replace').strip()}")


def diff_files(before: dict[str, str], after: dict[str, str]) -> str:
    """A unified diff (git format, a/ b/ prefixes) turning `before` files into `after` files."""
    import difflib

    chunks = []
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel), after.get(rel)
        if old == new:
            continue
        a = [] if old is None else old.splitlines(keepends=True)
        b = [] if new is None else new.splitlines(keepends=True)
        header = f"diff --git a/{rel} b/{rel}\n"
        if old is None:
            header += "new file mode 100644\n"
        elif new is None:
            header += "deleted file mode 100644\n"
        lines = list(
            difflib.unified_diff(
                a, b, "/dev/null" if old is None else f"a/{rel}", "/dev/null" if new is None else f"b/{rel}", n=3
            )
        )
        for i, line in enumerate(lines):
            if not line.endswith("\n"):
                lines[i] = line + "\n\\ No newline at end of file\n"
        chunks.append(header + "".join(lines))
    return "".join(chunks)


def worktree_diff(workdir: Path) -> str:
    """The diff of the working tree against HEAD, untracked files included (git format)."""
    _git(workdir, "add", "-A", "--intent-to-add")
    return _git(workdir, "diff", "--no-color", "--no-ext-diff", "HEAD").decode(errors="replace")


def read_tree(path: Path, rev: str = "HEAD") -> dict[str, str]:
    """All tracked files at `rev` as path -> content, sorted by path."""
    with _open(path) as r:
        blobs = sorted(_blobs(r.commit(rev).tree), key=lambda b: b.path)
        return {b.path: b.data_stream.read().decode() for b in blobs}


def commit_paths(path: Path, rels: Iterable[str], message: str) -> str:
    """Stage `rels` in the repo at `path`, commit them with the fixed identity; return the new HEAD sha."""
    _git(path, "add", "--", *rels)
    _git(path, "commit", "-q", "--no-verify", "-m", message)
    return head_sha(path)
