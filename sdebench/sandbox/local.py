"""`sandbox=local`: every command runs in a fresh bubblewrap sandbox on the host.

The sandbox's root is an empty tmpfs holding the neutral view of `sdebench.sandbox.stage`: the
system dirs (`/usr`, the `/bin`-style links), a minimal `/etc`, fixed host-wide `/proc` files, the
running interpreter at `/opt/python`, and any configured `ro_binds` or read-only mounts, each
through an overlay of the command's own when run as root (so no two sandboxes share an inode);
the host's project checkouts, task store, home dirs and sockets (`/run`) are not there at all. The
workspace is bound at the neutral path `/repo` (read-write, or read-only but its `.sdebench-out/`
when grading); a fresh /tmp, no network, private pid/ipc/uts/cgroup namespaces, no capabilities,
the refused system calls of `sdebench.sandbox.seccomp`, configured masks (task store, results
dir) over anything bound, and a per-sandbox cgroup for memory and process count (rlimits as a
second layer). Each exec is its own pid namespace, so nothing outlives the command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat as stat_mod
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from sdebench.sandbox import cgroup, stage, uids
from sdebench.sandbox.base import (
    DEFAULT_OUTPUT_CAP,
    OUT_DIR,
    WORKDIR,
    ExecResult,
    Mount,
    SandboxError,
    Watch,
)
from sdebench.sandbox.files import copy_tree, resolve_inside
from sdebench.sandbox.process import run_process
from sdebench.sandbox.unsafe import base_env

INSTALL_HINT = (
    "bubblewrap is not installed: run `apt-get install bubblewrap` (or pick sandbox=unsafe_local explicitly)"
)
MIB = 1024 * 1024


@dataclass(frozen=True)
class LocalOptions:
    """Limits and masks of the bubblewrap backend (the `sandbox=local` config group)."""

    output_cap: int = DEFAULT_OUTPUT_CAP
    memory_mb: int = 2048  # cgroup hard limit (RAM + tmpfs pages)
    pids_max: int = 256  # cgroup process/thread count limit
    address_space_mb: int = 4096  # RLIMIT_AS per process
    file_size_mb: int = 512  # RLIMIT_FSIZE: largest file a command may write
    tmp_size_mb: int = 256  # size of the fresh /tmp
    masked: tuple[str, ...] = ()  # host paths hidden behind empty tmpfs (dirs) or /dev/null (files)
    mask_home: bool = True  # hide the host user's home (config files, credentials)
    require_cgroup: bool = False  # refuse to open when no cgroup can be made
    ro_binds: tuple[str, ...] = ()  # extra host paths bound read-only at the same path (e.g. an agent CLI)
    seccomp: bool = True  # refuse the system calls of sdebench.sandbox.seccomp
    require_private_inodes: bool = False  # refuse to open when sandboxes would share inodes (not root)


def bwrap_path() -> str:
    """The bubblewrap binary; raises SandboxError with the install hint when missing."""
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError(INSTALL_HINT)
    return path


def default_masks(opts: LocalOptions) -> list[str]:
    """Host paths hidden from every command: configured ones, the home dir and the host temp dir."""
    paths = list(opts.masked)
    if opts.mask_home:
        paths += [str(Path.home()), "/home"]
    tmp = tempfile.gettempdir()
    if Path(tmp).resolve() != Path("/tmp"):
        paths.append(tmp)
    return _existing(paths)


def package_dir() -> str:
    """The sdebench package itself: hidden too, the grader's protocol is nobody's business inside."""
    return str(Path(__file__).resolve().parent.parent)


def _existing(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        rp = Path(p).expanduser().resolve()
        if rp == Path("/"):
            raise SandboxError("the sandbox cannot mask '/'")
        if rp.exists() and str(rp) not in out:
            out.append(str(rp))
    return out


def _sockets(d: str) -> list[str]:
    """Unix sockets at the top of the dir `d` (an overlay cannot carry a connection to them)."""
    try:
        return [e.name for e in os.scandir(d) if stat_mod.S_ISSOCK(e.stat(follow_symlinks=False).st_mode)]
    except OSError:
        return []


class LocalSandbox:
    """Commands run under bubblewrap with the workspace bound at /repo."""

    def __init__(self, workspace: Path, opts: LocalOptions, bwrap: str, read_only: bool = False,
                 mounts: tuple[Mount, ...] = ()):
        self.mounts = tuple(mounts)
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise SandboxError(f"workspace {self.workspace} is not a directory")
        self.workdir = WORKDIR
        self.host_workspace = self.workspace  # the files live on the host: graded in place
        self.opts = opts
        self.bwrap = bwrap
        self.masks = default_masks(opts)
        self.stage = stage.get(bwrap, opts.memory_mb, opts.seccomp)
        if not self.stage.private and opts.require_private_inodes:
            raise SandboxError(f"sandboxes would share inodes ({self.stage.why_shared}; require_private_inodes is set)")
        self.read_only = read_only
        if read_only:
            (self.workspace / OUT_DIR).mkdir(exist_ok=True)
        self.uid: int | None = None
        self.table: stage.Table | None = None
        self._owners: dict[str, tuple[int, int]] = {}
        self.cgroup = None
        self._closed = False
        try:
            if self.stage.private:
                # A user of its own (no per-user kernel quota shared with another sandbox) owning its
                # files, and overlays and mount points of its own.
                self.uid = uids.claim()
                ro = [*_existing(list(opts.ro_binds)), *(m.source for m in self.mounts if m.read_only)]
                own = [str(self.workspace), *(m.source for m in self.mounts)]
                self.table = self.stage.table(ro, own)
                trees = [str(self.workspace), *(m.source for m in self.mounts if not m.read_only)]
                self._owners = {t: (os.stat(t).st_uid, os.stat(t).st_gid) for t in trees if os.path.isdir(t)}
            self.cgroup = cgroup.create(opts.memory_mb * MIB if opts.memory_mb else None, opts.pids_max or None)
            if self.cgroup is None and opts.require_cgroup:
                raise SandboxError("no writable cgroup for the memory and process limits (require_cgroup is set)")
        except BaseException:
            self.close()
            raise
        self.prlimit = shutil.which("prlimit")

    # --- command line --------------------------------------------------------------------
    def bwrap_args(self) -> list[str]:
        """The bubblewrap options of every exec."""
        st = self.stage
        args = [self.bwrap, *st.view_args()]
        size = ["--size", str(self.opts.tmp_size_mb * MIB)]
        args += [*size, "--tmpfs", "/tmp", *size, "--tmpfs", "/var/tmp"]
        # The interpreter is bound after /tmp, so a virtualenv under /tmp stays usable.
        args += st.interpreter_args()
        shown = [(d, d) for d in st.system_dirs()] + [(b.source, b.target) for b in st.interp.binds]
        for d in _existing(list(self.opts.ro_binds)):
            args += ["--ro-bind", st.source(st.name_for(d), d), d]
            shown.append((d, d))
        # Masks where they fall inside something shown (mapped to where it is shown).
        for m in [*self.masks, package_dir()]:
            for src, target in shown:
                if m == src or Path(m).is_relative_to(src):
                    args += self._mask(m, target + m[len(src):])
        at = self.table.at if self.table else (lambda p: p)
        for m in self.mounts:  # an installed agent's own files (after the masks: a mount may re-expose one)
            if not m.read_only:
                args += ["--bind", at(m.source), m.target]
                continue
            args += ["--ro-bind", st.source(st.name_for(m.source), m.source), m.target]
            for sock in _sockets(m.source):  # a connection cannot pass an overlay: the socket itself
                args += ["--bind", at(f"{m.source}/{sock}"), f"{m.target}/{sock}"]
        host = at(str(self.workspace))
        if self.read_only:
            # OUT_DIR stays the host's: the host opens a grading runner's gate there while it runs.
            args += ["--ro-bind", host, WORKDIR, "--bind", f"{host}/{OUT_DIR}", f"{WORKDIR}/{OUT_DIR}"]
        else:
            args += ["--bind", host, WORKDIR]
        args += ["--chdir", WORKDIR]
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
        args += ["--cap-drop", "ALL", "--hostname", "sandbox", *st.seccomp_args()]
        if self.uid is not None:
            args += ["--uid", "0", "--gid", "0"]  # root inside, its own user outside
        return args

    @staticmethod
    def _mask(host: str, target: str) -> list[str]:
        return ["--tmpfs", target] if Path(host).is_dir() else ["--ro-bind", "/dev/null", target]

    def limit_prefix(self) -> list[str]:
        """The launcher that joins the cgroup and sets rlimits before bubblewrap starts."""
        joins = "".join(
            f"echo $$ > {shlex.quote(f)} && " for f in (self.cgroup.procs_files if self.cgroup else [])
        )
        seccomp = f" {stage.SECCOMP_FD}<{shlex.quote(str(self.stage.seccomp))}" if self.stage.seccomp else ""
        prefix = ["/bin/sh", "-c", joins + 'exec "$@"' + seccomp, "sh"]
        if self.prlimit:
            limits = [f"--as={self.opts.address_space_mb * MIB}", f"--fsize={self.opts.file_size_mb * MIB}"]
            if self.cgroup is None and self.opts.pids_max:
                limits.append(f"--nproc={self.opts.pids_max}")
            prefix += [self.prlimit, *limits, "--"]
        return prefix

    def exec(
        self, cmd: str | list[str], timeout: float = 60.0, env: dict[str, str] | None = None, watch: Watch | None = None
    ) -> ExecResult:
        """Run `cmd` in a fresh bubblewrap sandbox on the workspace (stopped when `watch` expires)."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        inner = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = base_env({"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": self.stage.path(), **(env or {})})
        prefix = self.limit_prefix()
        if self.table is not None and self.uid is not None:
            prefix += [*self.stage.mount_prefix(self.table.fstab), *self.stage.as_user(self.uid)]
        argv = [*prefix, *self.bwrap_args(), "--", *inner]
        self._lend(True)
        try:
            result = run_process(argv, str(self.workspace), timeout, full_env, self.opts.output_cap, watch=watch)
        finally:
            if self.cgroup is not None:
                # The pid namespace dies with bubblewrap, asynchronously: wait until it has.
                self.cgroup.drain()
            self._lend(False)
        return result

    def _lend(self, to_sandbox: bool) -> None:
        """Hand the sandbox's writable trees (workspace, writable mounts) to its user for a command,
        and back to their host owner after it: between commands the host (its git, its copies)
        finds them as it left them, with what the command made owned by the host owner too."""
        if self.uid is None:
            return
        for tree, (uid, gid) in self._owners.items():
            if os.path.isdir(tree):
                uids.chown_tree(Path(tree), *((self.uid, self.uid) if to_sandbox else (uid, gid)))

    # --- files ---------------------------------------------------------------------------
    def read_file(self, rel: str) -> str:
        """Read a workspace file (never through a link out of the workspace)."""
        return resolve_inside(self.workspace, rel).read_text(errors="replace")

    def write_file(self, rel: str, content: str) -> None:
        """Write a workspace file (parents created; never through a link out of the workspace)."""
        p = resolve_inside(self.workspace, rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)

    def sync_out(self, dest: Path) -> None:
        """Copy the workspace into `dest` (links out of the workspace dropped)."""
        if Path(dest).resolve() != self.workspace:
            copy_tree(self.workspace, Path(dest), skip_git=False)

    def close(self) -> None:
        """Remove the cgroup and the mount table, give the user id back; safe to call twice."""
        if not self._closed:
            self._closed = True
            if self.cgroup is not None:
                self.cgroup.remove()
            if self.table is not None:
                self.table.remove()
            if self.uid is not None:
                uids.release(self.uid)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class LocalFactory:
    """Opens bubblewrap sandboxes; refuses with the install hint when bwrap is missing."""

    options: LocalOptions = field(default_factory=LocalOptions)
    name: str = "local"

    def __post_init__(self) -> None:
        self.bwrap = bwrap_path()

    def open(self, workspace: Path, read_only: bool = False, mounts: tuple[Mount, ...] = (),
             address_space_mb: int | None = None) -> LocalSandbox:
        """Open a sandbox on `workspace` (commands write only below OUT_DIR when `read_only`);
        `address_space_mb` raises RLIMIT_AS for it (memory stays bounded by the cgroup)."""
        opts = self.options
        if address_space_mb and address_space_mb > opts.address_space_mb:
            opts = replace(opts, address_space_mb=int(address_space_mb))
        return LocalSandbox(workspace, opts, self.bwrap, read_only, mounts)

    def cleanup(self) -> None:
        """Remove cgroups and view dirs left by processes that died without removing them."""
        cgroup.prune()
        stage.prune()
        uids.prune()


def options_from(cfg: dict) -> LocalOptions:
    """LocalOptions from a config dict; unknown keys raise SandboxError naming them."""
    known = set(LocalOptions.__dataclass_fields__)
    extra = sorted(set(cfg) - known)
    if extra:
        raise SandboxError(f"unknown sandbox.local option(s): {', '.join(extra)}")
    vals = dict(cfg)
    for key in ("masked", "ro_binds"):
        if key in vals:
            vals[key] = tuple(str(m) for m in (vals[key] or ()) if m)
    return LocalOptions(**vals)
