"""The private, neutral view every local (bubblewrap) sandbox is built from.

Bubblewrap binds host dirs into a sandbox, and a bind shares the host's inodes: two sandboxes
that see `/usr` see the same files, so a lock, a lease or a watch one of them sets on a system
file is seen by the other. Here every read-only dir a sandbox sees (the system dirs, the
interpreter, the agent CLIs, the fixed /etc and /proc files below) is first mounted as a
read-only overlay of its own, in a mount namespace private to that one command: each sandbox
meets its own inodes, and locks, leases and watches never cross (`private` mode; it needs root,
as the cgroup does). The overlays name their layers by neutral relative names, so the sandbox's
mount table names no host dir. Without root the same view is bound directly (shared inodes: the
documented fallback).

The view itself:

- `/etc` is a minimal one (`etcview`), with a linker cache that finds the interpreter's library;
- `/proc`'s host-wide files are fixed and neutral (`procview`), `/proc/sys` a frozen copy as a
  fresh sandbox saw it;
- `/dev`'s device nodes are the view's own (made here: bubblewrap would bind the host's);
- the interpreter running sdebench is shown at `/opt/python` (its virtualenv, if any, at
  `/opt/venv`), with its `bin/` scripts and `pyvenv.cfg` pointing there, and the editable
  installs of host checkouts hidden: no host path is left in `sys.prefix`, `PATH` or the mounts;
- `seccomp.bpf`, the system calls every sandbox refuses (`seccomp`).

One stage serves every sandbox of a process with the same memory limit; it lives in a private
temp dir removed at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import site
import stat as stat_mod
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from sdebench.sandbox import etcview, procview, seccomp, uids
from sdebench.sandbox.base import SandboxError

# Host dirs every sandbox sees (when they exist; /etc is replaced by the minimal one).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PYTHON_DIR = "/opt/python"
VENV_DIR = "/opt/venv"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
PREFIX = "sdb-view-"
EMPTY = "e"  # the empty layer over a single-dir overlay (an overlay without upper needs two)
SECCOMP_FD = 9
# A text file of a bin dir larger than this is copied as it is (no path rewritten).
MAX_SCRIPT = 256 * 1024


@dataclass(frozen=True)
class Bind:
    """A host dir shown read-only at `target`, under the layer name `name`."""

    name: str
    source: str
    target: str


@dataclass
class Interpreter:
    """How the running interpreter is shown: its dirs, the fixes bound over them, the first PATH dir."""

    binds: list[Bind] = field(default_factory=list)
    fixes: list[tuple[str, str]] = field(default_factory=list)  # (view-relative source, target)
    hidden: list[tuple[str, bool]] = field(default_factory=list)  # (in-sandbox path, is a dir): editable installs
    bin_dir: str = ""
    lib_dirs: list[str] = field(default_factory=list)  # library dirs the linker must find at their new path

    def target_of(self, host: str) -> str | None:
        """Where the host path `host` appears in the sandbox, if it lies in a bound dir."""
        for b in self.binds:
            if host == b.source or host.startswith(b.source + "/"):
                return b.target + host[len(b.source):]
        return None


def under(path: str, parents) -> bool:
    """True when `path` is one of `parents` or inside one."""
    return any(Path(path) == Path(p) or Path(path).is_relative_to(p) for p in parents)


def _outermost(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(q != p and Path(p).is_relative_to(q) for q in paths)]


def interpreter() -> Interpreter:
    """The layout of the running interpreter: prefixes outside the system dirs move to /opt."""
    base = os.path.realpath(sys.base_prefix)
    prefix = os.path.realpath(sys.prefix)
    out = Interpreter()
    if not under(base, SYSTEM_DIRS):
        out.binds.append(Bind("python", base, PYTHON_DIR))
    if prefix != base and not under(prefix, SYSTEM_DIRS):
        out.binds.append(Bind("venv", prefix, VENV_DIR))
    # Anything else the interpreter uses (a site dir outside its prefixes) stays where it is.
    extra = [str(Path(os.path.realpath(sys.executable)).parent.parent), *site.getsitepackages()]
    known = [b.source for b in out.binds]
    rest = [os.path.realpath(p) for p in extra if p and os.path.isdir(p)]
    rest = _outermost([p for p in dict.fromkeys(rest) if not under(p, [*known, *SYSTEM_DIRS])])
    out.binds += [Bind(f"py{i}", p, p) for i, p in enumerate(rest)]
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    out.bin_dir = out.target_of(os.path.realpath(exe_dir)) or exe_dir
    for b in out.binds:
        if b.target in (PYTHON_DIR, VENV_DIR):
            out.fixes.append((f"fix/{b.name}/bin", b.target + "/bin"))
            if Path(b.source, "lib").is_dir() and any(Path(b.source, "lib").glob("libpython*.so*")):
                out.lib_dirs.append(b.target + "/lib")
    if any(b.name == "venv" for b in out.binds):
        out.fixes.append(("fix/venv/pyvenv.cfg", VENV_DIR + "/pyvenv.cfg"))
    for sp in site.getsitepackages():
        target = out.target_of(os.path.realpath(sp))
        if target and os.path.isdir(sp):
            out.hidden += [(f"{target}/{n}", Path(sp, n).is_dir()) for n in sorted(os.listdir(sp))
                           if _host_checkout_file(Path(sp, n))]
    return out


def _host_checkout_file(p: Path) -> bool:
    """An install file of an editable (host checkout) install: it names a host path and works nowhere else."""
    name = p.name
    if name.startswith("__editable__") or name.endswith(".egg-link"):
        return True
    if name.endswith(".dist-info") and (p / "direct_url.json").is_file():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            return bool(json.loads((p / "direct_url.json").read_text()).get("dir_info", {}).get("editable"))
    if name.endswith(".pth") and p.is_file():
        with contextlib.suppress(OSError):
            lines = p.read_text(errors="replace").splitlines()
            return any(line.strip().startswith("/") for line in lines)
    return False


def _rewrite(text: str, mapping: list[tuple[str, str]]) -> str:
    for src, dst in mapping:
        text = text.replace(src, dst)
    return text


def _fix_bin(src: Path, dst: Path, mapping: list[tuple[str, str]]) -> None:
    """A copy of the bin dir `src` whose links and scripts point at the neutral paths."""
    dst.mkdir(parents=True, exist_ok=True)
    for e in sorted(src.iterdir()):
        out = dst / e.name
        if e.is_symlink():
            os.symlink(_rewrite(os.readlink(e), mapping), out)
        elif e.is_file():
            data = e.read_bytes()
            if data.startswith(b"#!") and len(data) <= MAX_SCRIPT:
                with contextlib.suppress(UnicodeDecodeError):
                    data = _rewrite(data.decode(), mapping).encode()
            out.write_bytes(data)
            os.chmod(out, stat_mod.S_IMODE(e.stat().st_mode))


def _fix_venv_cfg(src: Path, dst: Path, mapping: list[tuple[str, str]]) -> None:
    lines = []
    for line in src.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        if key in ("executable", "command"):
            continue  # the host's creation command: not needed to run
        lines.append(_rewrite(line, mapping))
    dst.write_text("\n".join(lines) + "\n")


def _fstab_path(p: str) -> str:
    """`p` escaped for a mount table (space, tab, newline and backslash as octal)."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in p)


@dataclass
class Table:
    """One sandbox's mount table and the paths bubblewrap finds its private dirs at."""

    fstab: Path
    staged: dict[str, str]
    own: Path  # its mount points

    def at(self, host: str) -> str:
        """Where bubblewrap finds the host path `host` (itself when it is not staged)."""
        for src, point in self.staged.items():
            if host == src or host.startswith(src + "/"):
                return point + host[len(src):]
        return host

    def remove(self) -> None:
        """Delete the table and its mount points."""
        self.fstab.unlink(missing_ok=True)
        shutil.rmtree(self.own, ignore_errors=True)


class Stage:
    """The files of the view, the overlay layers and the command prefix that mounts them."""

    def __init__(self, bwrap: str, memory_mb: int, use_seccomp: bool = True):
        self.bwrap = bwrap
        self.memory_mb = memory_mb
        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        os.chmod(self.root, 0o755)
        self.view = self.root / "view"
        self.links = self.root / "l"
        self.mnt = self.root / "m"
        self._lock = threading.Lock()
        self._names: dict[str, str] = {}
        try:
            self.interp = interpreter()
            self._build(use_seccomp)
        except BaseException:
            self.remove()
            raise

    # --- building --------------------------------------------------------------------------------
    def _build(self, use_seccomp: bool) -> None:
        for d in (self.view, self.links / EMPTY, self.mnt, self.root / "f"):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o755)
        (self.view / "empty").mkdir()
        (self.view / "null").write_bytes(b"")
        os.symlink(self.view, self.links / "view")
        mapping = [(b.source, b.target) for b in sorted(self.interp.binds, key=lambda b: -len(b.source))]
        for b in self.interp.binds:
            os.symlink(b.source, self.links / b.name)
            if b.target in (PYTHON_DIR, VENV_DIR) and Path(b.source, "bin").is_dir():
                _fix_bin(Path(b.source, "bin"), self.view / "fix" / b.name / "bin", mapping)
            if b.name == "venv":
                _fix_venv_cfg(Path(b.source, "pyvenv.cfg"), self.view / "fix" / "venv" / "pyvenv.cfg", mapping)
        for d in self.system_dirs():
            self.name_for(d)
        etcview.build(self.view / "etc", ld_dirs=tuple(self.interp.lib_dirs))
        snapshot = self._bootstrap()
        self.private, self.why_shared = self._try_private()
        # Its own user is never root; without it the sandbox runs as whoever runs sdebench.
        self._write_proc(procview.build(snapshot, self.memory_mb, as_root=not self.private and os.geteuid() == 0))
        self.seccomp = None
        if use_seccomp:
            self.seccomp = self.root / "seccomp.bpf"
            self.seccomp.write_bytes(seccomp.bpf_program())
        for p in self.view.rglob("*"):
            if not p.is_symlink() and p.is_dir():
                os.chmod(p, 0o755)

    def system_dirs(self) -> list[str]:
        """The system dirs that are dirs here (links among them are recreated as links)."""
        return [d for d in SYSTEM_DIRS if Path(d).is_dir() and not Path(d).is_symlink()]

    def _bootstrap(self) -> procview.Snapshot:
        """Build the linker cache for the neutral layout and snapshot /proc, in a fresh sandbox."""
        args = [self.bwrap]
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                args += ["--ro-bind", d, d]
        args += ["--bind", str(self.view / "etc"), "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for b in self.interp.binds:
            args += ["--ro-bind", b.source, b.target]
        for rel, target in self.interp.fixes:
            args += ["--ro-bind", str(self.view / rel), target]
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                 "--cap-drop", "ALL", "--hostname", etcview.HOSTNAME, "--chdir", "/tmp"]
        python = f"{self.interp.bin_dir}/python3" if self.interp.bin_dir else "python3"
        script = ('ldconfig -X -C /etc/ld.so.cache -f /etc/ld.so.conf 2>/dev/null || exit 3; '
                  'exec "$0" -I -c "$1"')
        env = {"PATH": f"{self.interp.bin_dir}:{SYSTEM_PATH}", "LANG": "C.UTF-8"}
        try:
            r = subprocess.run([*args, "--", "/bin/sh", "-c", script, python, procview.SNAPSHOT_PROGRAM],
                               capture_output=True, text=True, timeout=120, env=env)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxError(f"cannot build the sandbox view: {e}") from None
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            raise SandboxError(f"cannot build the sandbox view (linker cache or /proc snapshot): {why}")
        return procview.Snapshot.parse(r.stdout)

    def _write_proc(self, view: procview.ProcView) -> None:
        proc = self.view / "proc"
        proc.mkdir()
        for name, data in view.files.items():
            (proc / name).write_bytes(data)
        sysdir = proc / "sys"
        for rel, data in view.sysctl.items():
            p = sysdir / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            os.chmod(p, 0o444)
        self.proc_files = tuple(sorted(view.files))
        self.proc_dirs = tuple(sorted(view.dirs))

    def _make_devices(self) -> bool:
        """Device nodes of the view's own (root only); False when they cannot be made."""
        dev = self.view / "dev"
        dev.mkdir(exist_ok=True)
        try:
            for name in DEVICES:
                st = os.stat(f"/dev/{name}")
                os.mknod(dev / name, 0o666 | stat_mod.S_IFCHR, st.st_rdev)
                os.chmod(dev / name, 0o666)
        except OSError:
            shutil.rmtree(dev, ignore_errors=True)
            return False
        return True

    def _try_private(self) -> tuple[bool, str]:
        """Whether each command can get overlays of its own; the reason when not."""
        if os.geteuid() != 0:
            return False, "not root: overlays need a private mount namespace"
        self.unshare, self.mount = shutil.which("unshare"), shutil.which("mount")
        if not self.unshare or not self.mount:
            return False, "util-linux `unshare` and `mount` are needed"
        if not self._make_devices():
            return False, "cannot make device nodes"
        self.setpriv = shutil.which("setpriv")
        if not self.setpriv:
            return False, "util-linux `setpriv` is needed"
        # The whole chain once: overlays mounted, root dropped for a user of its own, bubblewrap on top.
        table = self.table([], [])
        uid = uids.claim()
        sandbox = [self.bwrap, "--ro-bind", str(self.mnt / "usr"), "/usr", "--symlink", "usr/bin", "/bin",
                   "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc",
                   "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0", "--", "/usr/bin/true"]
        try:
            r = subprocess.run([*self.mount_prefix(table.fstab), *self.as_user(uid), *sandbox],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, str(e)
        finally:
            table.remove()
            uids.release(uid)
        if r.returncode != 0:
            return False, (r.stderr.strip().splitlines() or ["overlay mount failed"])[-1]
        return True, ""

    # --- layers ----------------------------------------------------------------------------------
    def name_for(self, source: str) -> str:
        """The layer name of the host dir `source` (stable; a neutral word, never a host path)."""
        with self._lock:
            name = self._names.get(source)
            if name is None:
                base = Path(source).name if source in SYSTEM_DIRS else f"d{len(self._names)}"
                name = self._names[source] = base
                link = self.links / name
                if not link.is_symlink():
                    os.symlink(source, link)
            return name

    def source(self, name: str, host: str) -> str:
        """Where bubblewrap finds the layer `name` (of host dir `host`): its overlay or the dir itself."""
        return str(self.mnt / name) if self.private else host

    def layers(self, extra: list[str]) -> list[str]:
        """Every layer name a sandbox uses: the fixed ones and those of the host dirs `extra`."""
        fixed = ["view", *(self.name_for(d) for d in self.system_dirs()), *(b.name for b in self.interp.binds)]
        return list(dict.fromkeys([*fixed, *(self.name_for(d) for d in extra)]))

    def table(self, extra: list[str], private: list[str]) -> Table:
        """One sandbox's mount table: overlays for the fixed layers and the host dirs `extra`, and
        plain binds of its `private` dirs and files (workspace, writable mounts) at mount points of
        its own, reachable by its user whatever the modes of their host parents."""
        token = secrets.token_hex(6)
        lines = []
        for name in self.layers(extra):
            (self.mnt / name).mkdir(exist_ok=True)
            # The empty layer on top gives the merged root its own modes (a host dir made by mkdtemp
            # is root's alone); everything below it keeps its own.
            lines.append(f"overlay {self.mnt / name} overlay ro,lowerdir={EMPTY}:{name} 0 0\n")
        own = self.mnt / f"s-{token}"
        staged: dict[str, str] = {}
        for i, host in enumerate(private):
            point = own / f"k{i}"
            if Path(host).is_dir():
                point.mkdir(parents=True)
            else:
                own.mkdir(exist_ok=True)
                point.touch()
            lines.append(f"{_fstab_path(host)} {_fstab_path(str(point))} none bind 0 0\n")
            staged[host] = str(point)
        path = self.root / "f" / f"{token}.fstab"
        path.write_text("".join(lines))
        return Table(path, staged, own)

    def mount_prefix(self, fstab: Path) -> list[str]:
        """The command prefix that mounts `fstab`'s overlays in a mount namespace of the command's own."""
        script = 'cd "$0" && "$1" -a -T "$2" || exit 125; shift 2; exec "$@"'
        return [self.unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
                str(self.links), self.mount, str(fstab)]

    # --- the command line ------------------------------------------------------------------------
    def view_args(self) -> list[str]:
        """bubblewrap options of the view: system dirs, /etc, /dev, /proc, the interpreter and its fixes."""
        view = self.source("view", str(self.view))
        args: list[str] = []
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                args += ["--ro-bind", self.source(self.name_for(d), d), d]
        args += ["--ro-bind", f"{view}/etc", "/etc", "--dev", "/dev"]
        if (self.view / "dev").is_dir():
            for name in DEVICES:
                args += ["--dev-bind", f"{view}/dev/{name}", f"/dev/{name}"]
        args += ["--proc", "/proc", "--ro-bind", f"{view}/proc/sys", "/proc/sys"]
        for name in self.proc_files:
            args += ["--ro-bind", f"{view}/proc/{name}", f"/proc/{name}"]
        for name in self.proc_dirs:  # an empty tmpfs of its own (cheaper for bubblewrap than a bind)
            args += ["--perms", "0555", "--size", "4096", "--tmpfs", f"/proc/{name}"]
        return args

    def interpreter_args(self) -> list[str]:
        """bubblewrap options showing the interpreter at its neutral path."""
        view = self.source("view", str(self.view))
        args: list[str] = []
        for b in self.interp.binds:
            args += ["--ro-bind", self.source(b.name, b.source), b.target]
        for rel, target in self.interp.fixes:
            args += ["--ro-bind", f"{view}/{rel}", target]
        for target, is_dir in self.interp.hidden:
            args += ["--ro-bind", f"{view}/empty" if is_dir else f"{view}/null", target]
        return args

    def as_user(self, uid: int) -> list[str]:
        """The command prefix that drops root for the sandbox's own user `uid` (private mode)."""
        return [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]

    def seccomp_args(self) -> list[str]:
        """bubblewrap's option loading the refused system calls (read from fd SECCOMP_FD)."""
        return ["--seccomp", str(SECCOMP_FD)] if self.seccomp else []

    def path(self) -> str:
        """The PATH of every command: the interpreter's bin dir, then the system's."""
        return f"{self.interp.bin_dir}:{SYSTEM_PATH}" if self.interp.bin_dir else SYSTEM_PATH

    def remove(self) -> None:
        """Delete the stage's files."""
        shutil.rmtree(self.root, ignore_errors=True)


_STAGES: dict[tuple, Stage] = {}
_STAGES_LOCK = threading.Lock()


def get(bwrap: str, memory_mb: int, use_seccomp: bool = True) -> Stage:
    """The stage of this process for these options (built once)."""
    key = (bwrap, memory_mb, use_seccomp)
    with _STAGES_LOCK:
        st = _STAGES.get(key)
        if st is None:
            st = _STAGES[key] = Stage(bwrap, memory_mb, use_seccomp)
        return st


def _remove_all() -> None:
    for st in list(_STAGES.values()):
        st.remove()


atexit.register(_remove_all)


def prune() -> int:
    """Remove stage dirs left by processes that no longer run; return how many."""
    removed = 0
    for d in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        owner = d.name[len(PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(d, ignore_errors=True)
            removed += not d.exists()
    return removed
