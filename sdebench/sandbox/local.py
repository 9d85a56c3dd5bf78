"""`sandbox=local`: every command runs in a fresh bubblewrap sandbox on the host.

The sandbox's root is an empty tmpfs holding only read-only binds of the system dirs (`/usr`,
`/etc`, the `/bin`-style links, ...), the running interpreter's dirs and any configured
`ro_binds`: the host's project checkouts, task store, home dirs and sockets (`/run`) are not
there at all. The workspace is bound at the neutral path `/repo` (read-write, or read-only but
its `.sdebench-out/` when grading); a fresh /tmp, no network, private pid/ipc/uts namespaces, no
capabilities, configured masks (task store, results dir) over anything bound, and a per-sandbox
cgroup for memory and process count (rlimits as a second layer). Each exec is its own pid
namespace, so nothing outlives the command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import site
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from sdebench.sandbox import cgroup
from sdebench.sandbox.base import (
    DEFAULT_OUTPUT_CAP,
    OUT_DIR,
    WORKDIR,
    ExecResult,
    Mount,
    SandboxError,
    Watch,
    mount_args,
)
from sdebench.sandbox.files import copy_tree, resolve_inside
from sdebench.sandbox.process import run_process
from sdebench.sandbox.unsafe import base_env

INSTALL_HINT = (
    "bubblewrap is not installed: run `apt-get install bubblewrap` (or pick sandbox=unsafe_local explicitly)"
)
MIB = 1024 * 1024
# Host dirs bound read-only into every sandbox (when they exist): enough for a shell, git, Python.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


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


def interpreter_dirs() -> list[str]:
    """Where the Python running sdebench lives (prefixes, site-packages, the executable's real dir):
    commands use it, so it is bound wherever it is, a virtualenv under /tmp or a home dir included."""
    dirs = [sys.base_prefix, sys.prefix, str(Path(sys.executable).parent),
            str(Path(os.path.realpath(sys.executable)).parent.parent)]
    dirs += [p for p in site.getsitepackages() if p]
    return _outermost(_existing(dirs))


def _outermost(paths: list[str]) -> list[str]:
    """`paths` without those inside another one of them."""
    return [p for p in paths if not any(q != p and Path(p).is_relative_to(q) for q in paths)]


def interpreter_bin() -> str:
    """The bin dir of the running interpreter (first on PATH inside the sandbox)."""
    return str(Path(sys.executable).parent)


def _existing(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        rp = Path(p).expanduser().resolve()
        if rp == Path("/"):
            raise SandboxError("the sandbox cannot mask '/'")
        if rp.exists() and str(rp) not in out:
            out.append(str(rp))
    return out


def _under(path: str, parents: list[str]) -> bool:
    return any(Path(path) == Path(m) or Path(path).is_relative_to(m) for m in parents)


def root_binds(extra: tuple[str, ...] = ()) -> list[str]:
    """bubblewrap options building the sandbox root: system dirs (links kept as links) and `extra`."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for d in _existing(list(extra)):
        args += ["--ro-bind", d, d]
    return args


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
        self.cgroup = cgroup.create(opts.memory_mb * MIB if opts.memory_mb else None, opts.pids_max or None)
        if self.cgroup is None and opts.require_cgroup:
            raise SandboxError("no writable cgroup for the memory and process limits (require_cgroup is set)")
        self.prlimit = shutil.which("prlimit")
        self.read_only = read_only
        if read_only:
            (self.workspace / OUT_DIR).mkdir(exist_ok=True)
        self._closed = False

    # --- command line --------------------------------------------------------------------
    def bwrap_args(self) -> list[str]:
        """The bubblewrap options of every exec."""
        args = [self.bwrap, *root_binds(self.opts.ro_binds)]
        args += ["--dev", "/dev", "--proc", "/proc"]
        size = ["--size", str(self.opts.tmp_size_mb * MIB)]
        args += [*size, "--tmpfs", "/tmp", *size, "--tmpfs", "/var/tmp"]
        masks = [*self.masks, package_dir()]
        system = [*SYSTEM_DIRS, *self.opts.ro_binds]
        args += [a for m in masks if _under(m, system) for a in self._mask(m)]
        # The interpreter is bound after /tmp and the masks, so a virtualenv under /tmp or a home
        # dir stays usable; masks inside it (never one of its ancestors) apply again.
        interp = interpreter_dirs()
        for d in interp:
            args += ["--ro-bind", d, d]
        args += [a for m in masks if _under(m, interp) and not _under(m, system) for a in self._mask(m)]
        args += mount_args(self.mounts)  # an installed agent's own files (after the masks: a mount may re-expose one)
        host = str(self.workspace)
        if self.read_only:
            args += ["--ro-bind", host, WORKDIR, "--bind", f"{host}/{OUT_DIR}", f"{WORKDIR}/{OUT_DIR}"]
        else:
            args += ["--bind", host, WORKDIR]
        args += ["--chdir", WORKDIR]
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
        args += ["--cap-drop", "ALL", "--hostname", "sandbox"]
        return args

    @staticmethod
    def _mask(path: str) -> list[str]:
        return ["--tmpfs", path] if Path(path).is_dir() else ["--ro-bind", "/dev/null", path]

    def limit_prefix(self) -> list[str]:
        """The launcher that joins the cgroup and sets rlimits before bubblewrap starts."""
        joins = "".join(
            f"echo $$ > {shlex.quote(f)} && " for f in (self.cgroup.procs_files if self.cgroup else [])
        )
        prefix = ["/bin/sh", "-c", joins + 'exec "$@"', "sh"]
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
        path = interpreter_bin() + ":" + os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        full_env = base_env({"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": path, **(env or {})})
        argv = [*self.limit_prefix(), *self.bwrap_args(), "--", *inner]
        result = run_process(argv, str(self.workspace), timeout, full_env, self.opts.output_cap, watch=watch)
        if self.cgroup is not None:
            # The pid namespace dies with bubblewrap, asynchronously: wait until it has.
            self.cgroup.drain()
        return result

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
        """Remove the cgroup; safe to call twice."""
        if not self._closed:
            self._closed = True
            if self.cgroup is not None:
                self.cgroup.remove()

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
        """Remove cgroups left by sandboxes of processes that died without closing them."""
        cgroup.prune()


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
