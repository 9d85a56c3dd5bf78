"""A fixed, neutral view of the host-wide files of /proc.

Most of /proc outside the per-process dirs describes the whole host as it changes: free memory,
load, CPU and disk counters, locks, open files, keys, pressure. Any two sandboxes reading them
share a channel: one allocates memory or spins, the other watches the figure move. Every sandbox
therefore sees those entries replaced by fixed content: neutral figures where programs parse them
(`meminfo` sized to the sandbox's memory limit, idle `stat`, `loadavg` and `uptime`), frozen
copies elsewhere (what does not move carries nothing), empty dirs for the rest. Only what is the
reader's own stays live: its processes, its mount table, its network and IPC namespaces.

`sdebench.sandbox.stage` builds the local backend's view from this; the docker backend binds the
few files its runtime lets it replace and masks the rest.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field

# Entries of /proc that stay live: the reader's own processes and namespaces.
LIVE = frozenset({"self", "thread-self", "mounts", "net", "sysvipc"})
# Entries that describe the kernel or hardware and never move without the host's admin: read live.
STATIC = frozenset({"cmdline", "config.gz", "consoles", "devices", "dma", "execdomains", "filesystems", "iomem",
                    "ioports", "misc", "mtrr", "version"})
# Entries no reader may see at all (kernel memory, the kernel log, page maps): always empty.
EMPTY = frozenset({"kcore", "kmsg", "kpagecgroup", "kpagecount", "kpageflags", "kallsyms", "locks", "keys",
                   "key-users", "timer_list", "sched_debug", "latency_stats", "vmcore", "config.gz"})
# A frozen copy larger than this is left empty (no program parses such a file whole).
MAX_FROZEN = 256 * 1024
# Fixed figures: an idle machine that has been up 1000 s.
UPTIME = "1000.00 0.00\n"
LOADAVG = "0.00 0.00 0.00 1/1 1\n"
# The files of /proc the docker runtime lets a container bind over; it masks the others.
DOCKER_BINDABLE = ("cpuinfo", "diskstats", "meminfo", "stat", "swaps", "uptime", "loadavg", "slabinfo")

# Run inside a fresh sandbox (so that namespaced values are a sandbox's, not the host's): prints
# {"top": {name: "dir" | "link" | base64 content | null}, "sys": {relpath: base64 content}}.
SNAPSHOT_PROGRAM = f"CAP = {MAX_FROZEN}\n" + r"""
import base64, json, os
def read(p, cap):
    try:
        with open(p, "rb") as f:
            data = f.read(cap + 1)
        return base64.b64encode(data).decode() if len(data) <= cap else None
    except OSError:
        return None
top = {}
modes = {}
for name in sorted(os.listdir("/proc")):
    p = "/proc/" + name
    if name.isdigit():
        continue
    modes[name] = os.lstat(p).st_mode & 0o777
    if os.path.islink(p):
        top[name] = "link"
    elif os.path.isdir(p):
        top[name] = "dir"
    else:
        top[name] = read(p, CAP) if os.access(p, os.R_OK) else None
sysctl = {}
for d, dirs, files in os.walk("/proc/sys"):
    for f in files:
        p = os.path.join(d, f)
        sysctl[os.path.relpath(p, "/proc/sys")] = (read(p, 65536) or "") if os.access(p, os.R_OK) else ""
print(json.dumps({"top": top, "modes": modes, "sys": sysctl}))
"""


def meminfo(memory_mb: int, keys: list[str]) -> str:
    """A meminfo of `keys` (the kernel's, in order) for a machine of `memory_mb` with all of it free."""
    kb = memory_mb * 1024
    full = {"MemTotal", "MemFree", "MemAvailable", "CommitLimit"}
    lines = []
    for k in keys or ["MemTotal", "MemFree", "MemAvailable"]:
        if k.startswith("HugePages_"):
            lines.append(f"{k + ':':<16}{0:>8}")
        else:
            lines.append(f"{k + ':':<16}{kb if k in full else 0:>8} kB")
    return "\n".join(lines) + "\n"


def stat(ncpu: int, btime: int) -> str:
    """An idle /proc/stat with `ncpu` CPUs (glibc counts CPUs from it when /sys is absent)."""
    zeros = " ".join("0" for _ in range(10))
    lines = [f"cpu  {zeros}", *(f"cpu{i} {zeros}" for i in range(ncpu))]
    lines += ["intr 0", "ctxt 0", f"btime {btime}", "processes 0", "procs_running 1", "procs_blocked 0",
              "softirq 0 0 0 0 0 0 0 0 0 0 0"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Snapshot:
    """What a fresh sandbox saw in /proc: its top-level entries and every file of /proc/sys."""

    top: dict[str, str | None]
    sysctl: dict[str, str]
    modes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        """Read the output of SNAPSHOT_PROGRAM."""
        data = json.loads(text)
        return cls(data["top"], data["sys"], data.get("modes", {}))


@dataclass(frozen=True)
class ProcView:
    """The fixed /proc: file contents and empty dirs by top-level name, and the /proc/sys tree."""

    files: dict[str, bytes]
    dirs: tuple[str, ...]
    sysctl: dict[str, bytes]


def _decode(value: str | None) -> bytes:
    return base64.b64decode(value) if value else b""


def _meminfo_keys(raw: bytes) -> list[str]:
    return [line.split(":", 1)[0] for line in raw.decode(errors="replace").splitlines() if ":" in line]


def _btime(raw: bytes) -> int:
    for line in raw.decode(errors="replace").splitlines():
        if line.startswith("btime "):
            return int(line.split()[1])
    return 0


def neutral_file(name: str, raw: bytes, memory_mb: int, ncpu: int) -> bytes:
    """The fixed content shown for the top-level /proc file `name` (whose live content was `raw`)."""
    if name in EMPTY:
        return b""
    if name == "meminfo":
        return meminfo(memory_mb, _meminfo_keys(raw)).encode()
    if name == "stat":
        return stat(ncpu, _btime(raw)).encode()
    if name == "uptime":
        return UPTIME.encode()
    if name == "loadavg":
        return LOADAVG.encode()
    if name in ("swaps",):
        return raw.splitlines(keepends=True)[0] if raw else b""
    if name in ("diskstats", "slabinfo", "vmstat", "zoneinfo", "buddyinfo", "pagetypeinfo", "interrupts",
                "softirqs", "schedstat", "vmallocinfo"):
        return b""  # pure activity counters: nothing to keep
    return raw  # frozen: a description of the machine, fixed from now on


def build(snapshot: Snapshot, memory_mb: int, ncpu: int | None = None, as_root: bool = True) -> ProcView:
    """The neutral view of `snapshot` for a sandbox limited to `memory_mb`; unless it runs `as_root`
    on the host, entries only root may read are left as they are (nobody can read them)."""
    ncpu = ncpu or os.cpu_count() or 1
    files: dict[str, bytes] = {}
    dirs: list[str] = []
    for name, value in snapshot.top.items():
        if name in LIVE or name in STATIC or name == "sys" or value == "link":
            continue
        if not as_root and not snapshot.modes.get(name, 0o444) & 0o004:
            continue
        if value == "dir":
            dirs.append(name)
        else:
            files[name] = neutral_file(name, _decode(value), memory_mb, ncpu)
    sysctl = {rel: _decode(v) for rel, v in snapshot.sysctl.items()}
    return ProcView(files, tuple(dirs), sysctl)


def host_snapshot() -> Snapshot:
    """The host's own /proc top level (no /proc/sys): enough for the files docker binds."""
    top: dict[str, str | None] = {}
    for name in DOCKER_BINDABLE:
        try:
            with open(f"/proc/{name}", "rb") as f:
                top[name] = base64.b64encode(f.read(MAX_FROZEN)).decode()
        except OSError:
            top[name] = None
    return Snapshot(top, {})


# Host-wide counters under /proc/sys (the rest of it holds settings, or the reader's namespaces').
SYS_COUNTERS = ("fs/file-nr", "fs/inode-nr", "fs/inode-state", "fs/dentry-state", "fs/aio-nr", "fs/quota",
                "kernel/pty/nr", "kernel/random/entropy_avail", "kernel/hung_task_detect_count",
                "kernel/warn_count", "kernel/oops_count", "kernel/tainted")
# Docker's own default masks, kept (setting masks replaces them).
DOCKER_DEFAULT_MASKS = ("/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware")


def docker_masks(proc: str = "/proc") -> list[str]:
    """Paths a container sees masked: every top-level /proc entry that is neither its own, nor static,
    nor bound to a fixed copy; the counters of /proc/sys; and the reader's cgroup files."""
    names = [n for n in sorted(os.listdir(proc)) if not n.isdigit()]
    keep = LIVE | STATIC | set(DOCKER_BINDABLE) | {"sys"}
    masks = [f"/proc/{n}" for n in names if n not in keep]
    masks += [f"/proc/sys/{rel}" for rel in SYS_COUNTERS if os.path.exists(f"{proc}/sys/{rel}")]
    masks += ["/sys/fs/cgroup"]
    return sorted(set(masks) | set(DOCKER_DEFAULT_MASKS))


def write_docker_files(dest: str, memory_mb: int, snapshot: Snapshot | None = None) -> dict[str, str]:
    """Write the fixed files a container binds over /proc into `dest`: {host file: /proc path}."""
    snapshot = snapshot or host_snapshot()
    out = {}
    for name in DOCKER_BINDABLE:
        if name not in snapshot.top:
            continue
        path = os.path.join(dest, name)
        with open(path, "wb") as f:
            f.write(neutral_file(name, _decode(snapshot.top[name]), memory_mb, os.cpu_count() or 1))
        os.chmod(path, 0o444)
        out[path] = f"/proc/{name}"
    return out
