"""Probes of the channels two concurrent sandboxes could use to talk to each other.

A probe is a pair of small Python programs run inside two sandboxes at once: the sender sets up
a state that encodes one bit (1: it acts, 0: it idles), says it is ready and holds the state until
the host writes a stop file into its workspace; the receiver, started once the sender is ready,
prints one observation. A channel passes a bit when the receiver's observations under bit 0 and
bit 1 differ (and, over several rounds, are the same each time); a closed channel gives one
observation whatever the sender does.

Probes run in batches, one sandbox command a side for a whole batch (a sandbox start costs more
than most probes): the sender command holds every probe's state at once, each in a process of its
own; the receiver command runs the probes' receivers one after the other, then the passive ones
(watches, which any access by another receiver would set off) together. Probes of one batch do
not meet each other's state: senders act only under bit 1, lock kinds that share the kernel's
lock table use byte ranges of their own, and what fills a quota or reads host-wide activity
runs in a batch of its own (`inventory`).

The sender and the receiver never share a file of the host but what the backend shows them both
(system dirs, the interpreter, read-only mounts): the probes use exactly those. Used by
`tests/sandbox/test_channels.py` and `experiments/bench_channels.py`.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field

# Shared by every probe program: libc through ctypes, and the sender's hold loop.
PRELUDE = r"""
import ctypes, errno, fcntl, hashlib, json, os, select, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def ready():
    fd = globals().get("READY_FD", -1)  # in a batch: one byte to the batch's parent
    if fd >= 0:
        os.write(fd, b"x"); os.close(fd)
    else:
        sys.stdout.write("READY\n"); sys.stdout.flush()
def hold():
    ready()
    while not os.path.exists(STOP):
        time.sleep(0.05)
def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
"""

# --- shared inodes -------------------------------------------------------------------------------
FLOCK_SEND = """
if BIT:
    f = open(TARGET, "rb"); fcntl.flock(f, fcntl.LOCK_SH)
hold()
"""
FLOCK_RECV = """
f = open(TARGET, "rb")
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print("free")
except OSError as e:
    print("busy", errno.errorcode.get(e.errno))
"""
# struct flock: l_type, l_whence, l_start, l_len, l_pid (native alignment). Traditional and OFD
# locks share the kernel's lock table: each kind locks a byte of its own (START).
POSIX_SEND = """
if BIT:
    f = open(TARGET, "rb")
    fcntl.fcntl(f, CMD_SET, struct.pack("@hhqqi", fcntl.F_RDLCK, 0, START, 1, 0))
hold()
"""
POSIX_RECV = """
f = open(TARGET, "rb")
try:
    out = fcntl.fcntl(f, CMD_GET, struct.pack("@hhqqi", fcntl.F_WRLCK, 0, START, 1, 0))
    print("unlocked" if struct.unpack("@hhqqi", out)[0] == fcntl.F_UNLCK else "locked")
except OSError as e:
    print("error", errno.errorcode.get(e.errno))
"""
LEASE_SEND = """
f = open(TARGET, "rb") if BIT else None
hold()
"""
LEASE_RECV = """
import signal
signal.signal(signal.SIGIO, signal.SIG_IGN)  # a lease broken by another opener signals its holder
fd = os.open(TARGET, os.O_RDONLY)
try:
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK); print("lease")
except OSError as e:
    print("refused", errno.errorcode.get(e.errno))
"""
TOUCH_SEND = """
ready()
while not os.path.exists(STOP):
    if BIT:
        with open(TARGET, "rb") as f:
            f.read(1)
    time.sleep(0.02)
"""
INOTIFY_RECV = """
fd = libc.inotify_init1(os.O_NONBLOCK)
if fd < 0 or libc.inotify_add_watch(fd, TARGET.encode(), 0x1 | 0x10 | 0x20) < 0:
    print("error", err()); sys.exit()
r, _, _ = select.select([fd], [], [], 0.5)
print("events" if r else "quiet")
"""
FANOTIFY_RECV = """
fd = libc.fanotify_init(0x200, os.O_RDONLY)  # FAN_REPORT_FID: allowed without privilege
AT_FDCWD = -100
if fd < 0 or libc.fanotify_mark(fd, 1, ctypes.c_uint64(0x1 | 0x10 | 0x20), AT_FDCWD, TARGET.encode()) < 0:
    print("error", err()); sys.exit()
r, _, _ = select.select([fd], [], [], 0.5)
print("events" if r else "quiet")
"""
ATIME_RECV = """
print(os.stat(TARGET).st_atime_ns)
"""

# --- host-wide readings --------------------------------------------------------------------------
# The sender's activity: memory, threads, pipes, an OFD lock and a key of its own, disk writes, CPU
# (a burst: enough to move every counter of it, not enough to starve the receiver).
BUSY_SEND = r"""
import threading
keep = []
if BIT:
    keep.append(bytearray(64 * 1024 * 1024))
    for i in range(0, len(keep[0]), 4096):
        keep[0][i] = 1
    ev = threading.Event()
    ts = [threading.Thread(target=ev.wait, daemon=True) for _ in range(64)]
    for t in ts: t.start()
    keep += [os.pipe() for _ in range(200)]
    lf = open("/tmp/sdb-probe-lock", "wb")
    fcntl.fcntl(lf, 37, struct.pack("@hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLK
    keep.append(libc.syscall(248, b"user", ("sdb-busy" + STOP).encode(), b"x" * 64, 64, -4))  # add_key: user keyring
    with open("big.bin", "wb") as f:
        f.write(os.urandom(2 * 1024 * 1024)); f.flush(); os.fsync(f.fileno())
    os.unlink("big.bin")
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); keep.append(s)
ready()
busy = time.monotonic() + 0.5
while not os.path.exists(STOP):
    if BIT and time.monotonic() < busy:
        x = 0
        for i in range(200000): x += i
    else:
        time.sleep(0.05)
if BIT and keep[-2] > 0:
    libc.syscall(250, 9, keep[-2], -4)  # KEYCTL_UNLINK
"""
# Files that change whatever anyone does (random by design) or belong to the reader alone (the
# last pid of its own pid namespace, which a container keeps across commands).
SCAN_EXEMPT = ("/proc/sys/kernel/random/uuid", "/proc/sys/kernel/ns_last_pid")
SCAN_RECV = r"""
def digest(p):
    try:
        with open(p, "rb") as f:
            return hashlib.sha1(f.read(1 << 20)).hexdigest()[:12]
    except OSError as e:
        return "!" + errno.errorcode.get(e.errno, "?")
out = {}
roots = ["/proc", "/sys"]
for root in roots:
    if not os.path.isdir(root):
        continue
    for d, dirs, files in os.walk(root, followlinks=False):
        if d == "/proc":
            dirs[:] = [x for x in dirs if not x.isdigit() and x not in ("self", "thread-self", "net")]
            files = [x for x in files if x not in ("kmsg", "kcore", "kpagecount", "kpageflags", "kpagecgroup")]
        if d.startswith("/sys") and d.count("/") > 7 or d == "/sys/kernel/slab":
            dirs[:] = []  # deep trees, and the slab caches' 7,000 figures (a host shows /proc/slabinfo too)
        for x in files:
            p = os.path.join(d, x)
            if len(out) < 20000 and os.access(p, os.R_OK) and p not in EXEMPT:
                out[p] = digest(p)
def sysinfo():
    buf = ctypes.create_string_buffer(256)
    if libc.sysinfo(buf) != 0:
        return "error " + err()
    uptime, l1, l5, l15, total, free, shared, buffers, swt, swf, procs = struct.unpack_from("@lLLLLLLLLLH", buf)
    return "%d %d %d %d" % (l1, free, procs, total)
out["sysinfo()"] = sysinfo()
with open(REPORT, "w") as f:
    json.dump(out, f)
print(len(out))
"""
# The host-wide inode counter of pipes and sockets (get_next_ino, handed out to each CPU in
# batches of 1024): the receiver counts the numbers others took while it made pipes, in three
# windows of 0.2 s (the least of them: a burst of the host's own passes, the sender does not).
INO_RECV = r"""
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
def others():
    inos = []
    t = time.monotonic()
    while time.monotonic() - t < 0.2:
        r, w = os.pipe(); inos.append(os.fstat(r).st_ino); os.close(r); os.close(w)
    return inos[-1] - inos[0] + 1 - len(inos)
print("many" if min(others() for _ in range(3)) > 800 else "few")
"""
INO_SEND = r"""
kids = []
for _ in range(2 if BIT else 0):
    pid = os.fork()
    if pid == 0:
        while not os.path.exists(STOP):
            for _ in range(500):
                r, w = os.pipe(); os.close(r); os.close(w)
        os._exit(0)
    kids.append(pid)
hold()
for k in kids:
    os.waitpid(k, 0)
"""

# --- names in shared namespaces ------------------------------------------------------------------
SYSV_SEND = """
ids = [libc.shmget(0x5DB0, 4096, 0o1666), libc.msgget(0x5DB1, 0o1666), libc.semget(0x5DB2, 1, 0o1666)] if BIT else []
hold()
if ids:
    libc.shmctl(ids[0], 0, None); libc.msgctl(ids[1], 0, None); libc.semctl(ids[2], 0, 0)  # IPC_RMID
"""
SYSV_RECV = """
print(" ".join("yes" if f(*a) >= 0 else "no" for f, a in (
    (libc.shmget, (0x5DB0, 0, 0)), (libc.msgget, (0x5DB1, 0)), (libc.semget, (0x5DB2, 0, 0)))))
"""
MQ_SEND = """
rt = ctypes.CDLL("librt.so.1", use_errno=True)
if BIT:
    rt.mq_open(b"/sdb-probe", os.O_CREAT | os.O_RDWR, 0o666, None)
hold()
rt.mq_unlink(b"/sdb-probe")
"""
MQ_RECV = """
rt = ctypes.CDLL("librt.so.1", use_errno=True)
print("yes" if rt.mq_open(b"/sdb-probe", os.O_RDONLY) >= 0 else "no " + err())
"""
SHM_SEND = """
if BIT and os.path.isdir("/dev/shm"):
    open("/dev/shm/sdb-probe", "w").close()
hold()
if BIT and os.path.exists("/dev/shm/sdb-probe"):
    os.unlink("/dev/shm/sdb-probe")
"""
SHM_RECV = """
print(os.path.exists("/dev/shm/sdb-probe"))
"""
ABSTRACT_SEND = """
if BIT:
    s = socket.socket(socket.AF_UNIX); s.bind("\\0sdb-probe"); s.listen()
hold()
"""
ABSTRACT_RECV = """
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\\0sdb-probe"); print("connected")
except OSError as e:
    print("refused", errno.errorcode.get(e.errno))
"""
TCP_SEND = """
if BIT:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 47391)); s.listen()
hold()
"""
TCP_RECV = """
s = socket.socket(); s.settimeout(1)
try:
    s.connect(("127.0.0.1", 47391)); print("connected")
except OSError as e:
    print("refused", errno.errorcode.get(e.errno))
"""
KEY_SEND = """
name = ("sdb-" + STOP).encode()
keys = [(libc.syscall(248, b"user", name, b"x", 1, k), k) for k in (-4, -5)] if BIT else []  # add_key
hold()
for key, ring in keys:
    if key > 0:
        libc.syscall(250, 9, key, ring)  # KEYCTL_UNLINK
"""
KEY_RECV = """
# keyctl(KEYCTL_SEARCH, keyring, "user", "sdb-probe", 0)
found = [libc.syscall(250, 10, k, b"user", ("sdb-" + STOP).encode(), 0) >= 0 for k in (-4, -5)]
print(found, err() if not any(found) else "")
"""
HOSTNAME_SEND = """
if BIT:
    libc.sethostname(b"sdb-probe", 9)
hold()
"""
HOSTNAME_RECV = """
print(os.uname().nodename)
"""


@dataclass(frozen=True)
class ChannelProbe:
    """One channel: the sender's and the receiver's program and the shared path they use, if any.
    A `passive` receiver only watches (any access by another receiver would set it off); one with
    a `report` writes its observation to that workspace file instead of its output."""

    name: str
    send: str
    receive: str
    target: str = ""
    params: dict = field(default_factory=dict)
    passive: bool = False
    report: str = ""

    def program(self, role: str, bit: int, stop: str) -> str:
        """The Python source run as `role` ('send' or 'receive')."""
        head = {"BIT": bit, "TARGET": self.target, "STOP": stop, "EXEMPT": SCAN_EXEMPT, "REPORT": self.report,
                **self.params}
        body = self.send if role == "send" else self.receive
        return PRELUDE + "".join(f"{k} = {v!r}\n" for k, v in head.items()) + body


def inode_probes(target: str, label: str) -> list[ChannelProbe]:
    """Every probe that meets on one shared file `target` (named `label` in reports)."""
    return [
        ChannelProbe(f"flock:{label}", FLOCK_SEND, FLOCK_RECV, target),
        ChannelProbe(f"posix-lock:{label}", POSIX_SEND, POSIX_RECV, target, {"CMD_SET": 6, "CMD_GET": 5, "START": 0}),
        ChannelProbe(f"ofd-lock:{label}", POSIX_SEND, POSIX_RECV, target, {"CMD_SET": 37, "CMD_GET": 36, "START": 1}),
        ChannelProbe(f"lease:{label}", LEASE_SEND, LEASE_RECV, target),
        ChannelProbe(f"inotify:{label}", TOUCH_SEND, INOTIFY_RECV, target, passive=True),
        ChannelProbe(f"fanotify:{label}", TOUCH_SEND, FANOTIFY_RECV, target, passive=True),
        ChannelProbe(f"atime:{label}", TOUCH_SEND, ATIME_RECV, target, passive=True),
    ]


def namespace_probes() -> list[ChannelProbe]:
    """Probes of names two sandboxes could share: IPC objects, sockets, keys, the hostname."""
    return [
        ChannelProbe("sysv-ipc", SYSV_SEND, SYSV_RECV),
        ChannelProbe("posix-mqueue", MQ_SEND, MQ_RECV),
        ChannelProbe("dev-shm", SHM_SEND, SHM_RECV),
        ChannelProbe("abstract-unix-socket", ABSTRACT_SEND, ABSTRACT_RECV),
        ChannelProbe("loopback-tcp", TCP_SEND, TCP_RECV),
        ChannelProbe("keyring", KEY_SEND, KEY_RECV),
        ChannelProbe("hostname", HOSTNAME_SEND, HOSTNAME_RECV),
    ]


# Page-cache residency of a large shared file (evicted by the host before each exchange): the
# sender reads 16 pages far apart, the receiver times one-byte reads of them.
PAGES_SEND = """
fd = os.open(TARGET, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for i in range(16 if BIT else 0):
    os.pread(fd, 1, i * 64 * 4096)
hold()
"""
PAGES_RECV = """
fd = os.open(TARGET, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
us = []
for i in range(16):
    a = time.perf_counter_ns(); os.pread(fd, 1, i * 64 * 4096); us.append((time.perf_counter_ns() - a) / 1000)
print("cached" if sorted(us)[8] < 20 else "cold")
"""


def counter_probes() -> list[ChannelProbe]:
    """Probes of host-wide counters read through a syscall rather than a file (sysinfo() is among
    the readings of SCAN)."""
    return [ChannelProbe("inode-counter", INO_SEND, INO_RECV)]


# Large files the sandboxes of each backend share and nobody reads (the page-cache probes use them).
PAGE_TARGETS = {
    "docker": ("/usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE/charclass_invlists.h",),
    "local": ("/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1", "/usr/lib/x86_64-linux-gnu/libicudata.so.72.1",
              "/usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE/charclass_invlists.h"),
}


def page_target(backend: str, sandbox) -> str | None:
    """The first large shared file of `backend` that `sandbox` shows (at least 4 MiB), or None."""
    for p in PAGE_TARGETS.get(backend, PAGE_TARGETS["local"]):
        if sandbox.exec(["python3", "-c", f"import os,sys; sys.exit(os.path.getsize({p!r}) < 4 << 20)"]).exit_code == 0:
            return p
    return None


def page_probe(target: str) -> ChannelProbe:
    """The page-cache probe on the large shared file `target` (evict it before each exchange)."""
    return ChannelProbe("page-cache", PAGES_SEND, PAGES_RECV, target)


# The channels no sandbox closes (measured by experiments/bench_channels.py; documented in
# docs/grading.md): a host-wide counter of pipe and socket inodes, and the page cache of shared files.
REMAINING = frozenset({"inode-counter", "page-cache"})


# Per-user kernel quotas (host-wide for one host user): inotify instances, pipe buffer pages.
QUOTA_INOTIFY_SEND = """
fds = []
while BIT:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
hold()
"""
QUOTA_INOTIFY_RECV = """
fds = []
while len(fds) < 64:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
print(len(fds))
"""
QUOTA_PIPE_SEND = """
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
keep = []
try:
    while BIT and len(keep) < 4000:
        keep.append(os.pipe())
except OSError:
    pass
hold()
"""
QUOTA_PIPE_RECV = """
r, w = os.pipe()
print(fcntl.fcntl(w, 1032))  # F_GETPIPE_SZ: a user over its soft quota gets one-page pipes
"""


def quota_probes() -> list[ChannelProbe]:
    """Probes of the kernel's per-user quotas."""
    return [ChannelProbe("quota:inotify-instances", QUOTA_INOTIFY_SEND, QUOTA_INOTIFY_RECV),
            ChannelProbe("quota:pipe-pages", QUOTA_PIPE_SEND, QUOTA_PIPE_RECV)]


def shared_files(backend: str) -> dict[str, str]:
    """Files every sandbox of `backend` sees, by kind: a system file, /etc, a device, the
    interpreter's library, a fixed /proc file."""
    import os
    import sys

    from sdebench.sandbox import stage

    if backend == "docker":
        python = "/usr/lib/python3.11/this.py"
    else:
        this = os.path.join(os.path.dirname(os.__file__), "this.py")
        base = os.path.realpath(sys.base_prefix)
        python = this
        if backend == "local" and not stage.under(base, stage.SYSTEM_DIRS):
            python = stage.PYTHON_DIR + os.path.realpath(this)[len(base):]
    return {"usr": "/usr/share/common-licenses/GPL-3", "etc": "/etc/passwd", "dev": "/dev/null",
            "python": python, "proc": "/proc/meminfo"}


def all_probes(files: dict[str, str]) -> list[ChannelProbe]:
    """Every on/off probe: each shared-inode probe on each of `files`, then names, counters, quotas."""
    out = [p for label, path in files.items() for p in inode_probes(path, label)]
    return out + namespace_probes() + counter_probes() + quota_probes()


# Every host reading (a file under /proc or /sys, sysinfo()) while the sender works or idles.
SCAN = ChannelProbe("host-readings", BUSY_SEND, SCAN_RECV, report=".sdb-scan.json")


# A batch's sender: every probe's sender in a process of its own, READY once all of them are (the
# modules every probe uses are imported once, before the forks).
BATCH_SEND = r"""
import ctypes, errno, fcntl, hashlib, json, os, select, signal, socket, struct, sys, threading, time
r, w = os.pipe()
kids = {}
for name, src in PROGRAMS:
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            exec(src, {"__name__": "__probe__", "READY_FD": w})
        except BaseException as e:
            sys.stderr.write("%s: %s: %s\n" % (name, type(e).__name__, e)); sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    kids[pid] = name
os.close(w)
n = 0
while n < len(kids):
    got = os.read(r, 4096)
    if not got:
        break
    n += len(got)
if n == len(kids):
    sys.stdout.write("READY\n"); sys.stdout.flush()
failed = [name for pid, name in kids.items() if os.waitpid(pid, 0)[1] != 0]
if failed or n < len(kids):
    sys.stderr.write("senders failed: %s\n" % failed); sys.exit(1)
"""
# A batch's receiver: each active receiver in turn, then the passive ones together, each in a
# process of its own (no file, handler or limit of one stays for the next); prints {name: [exit, output]}.
BATCH_RECV = r"""
import ctypes, errno, fcntl, hashlib, json, os, select, signal, socket, struct, sys, threading, time
def start(name, src):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r); os.dup2(w, 1); os.close(w)
        code = 0
        try:
            exec(src, {"__name__": "__probe__"})
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        except BaseException as e:
            sys.stderr.write("%s: %s: %s\n" % (name, type(e).__name__, e)); code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    os.close(w)
    return pid, r
def finish(pid, r):
    chunks = []
    while True:
        got = os.read(r, 65536)
        if not got:
            break
        chunks.append(got)
    os.close(r)
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), b"".join(chunks).decode(errors="replace").strip()]
out = {}
for name, src, passive in PROGRAMS:
    if not passive:
        out[name] = finish(*start(name, src))
watching = [(name, start(name, src)) for name, src, passive in PROGRAMS if passive]
for name, (pid, r) in watching:
    out[name] = finish(pid, r)
print(json.dumps(out))
"""


class _Ready:
    """A watch that notes the sender's READY line; never stops it (the stop file does)."""

    def __init__(self) -> None:
        self.seen = threading.Event()
        self.buf = b""

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        if b"READY" in self.buf:
            self.seen.set()

    def expired(self) -> bool:
        return False


@dataclass
class Exchange:
    """What the receiver observed with the sender holding bit 0 and bit 1 (once or more each)."""

    probe: str
    observed: dict[int, list[str]]

    @property
    def passes(self) -> bool:
        """True when the observation tells the bits apart, reproducibly."""
        zero, one = self.observed[0], self.observed[1]
        return len(set(zero)) == 1 and len(set(one)) == 1 and zero[0] != one[0]


def exchange_once(probes: list[ChannelProbe], sender, receiver, bit: int, timeout: float = 120.0) -> dict[str, str]:
    """Run the batch `probes`' senders with `bit` and, once all are ready, their receivers; return
    each probe's observation (its output, or its report file's content)."""
    stop = f".sdb-stop-{secrets.token_hex(4)}"
    names = ", ".join(p.name for p in probes)[:200]
    watch = _Ready()
    result: list = []
    send = [(p.name, p.program("send", bit, stop)) for p in probes]
    cmd = ["python3", "-c", f"PROGRAMS = {send!r}\n" + BATCH_SEND]
    t = threading.Thread(target=lambda: result.append(sender.exec(cmd, timeout=timeout, watch=watch)), daemon=True)
    t.start()
    try:
        if not watch.seen.wait(timeout):
            raise RuntimeError(f"{names}: the senders never got ready: {result[0].stderr[-800:] if result else ''}")
        # Readings first, before the other receivers' own activity.
        receive = [(p.name, p.program("receive", bit, stop), p.passive) for p in sorted(probes, key=lambda p: not p.report)]
        got = receiver.exec(["python3", "-c", f"PROGRAMS = {receive!r}\n" + BATCH_RECV], timeout=timeout)
        if got.exit_code != 0:
            raise RuntimeError(f"{names}: the receivers failed (exit {got.exit_code}): {got.stderr[-800:]}")
        out = json.loads(got.stdout)
    finally:
        sender.write_file(stop, "")
        t.join(timeout)
        if result and result[0].exit_code != 0:
            raise RuntimeError(f"{names}: the senders failed: {result[0].stderr[-800:]}")
    failed = {name: o for name, o in out.items() if o[0] != 0}
    if failed:
        raise RuntimeError(f"receivers failed: {failed} {got.stderr[-800:]}")
    return {p.name: receiver.read_file(p.report) if p.report else out[p.name][1] for p in probes}


def exchange(probes: list[ChannelProbe], sender, receiver, rounds: int = 1, prepare=None) -> dict[str, Exchange]:
    """Observe the batch `probes` under bit 0 and bit 1, `rounds` times each, interleaved;
    `prepare(probe)` runs on the host before each exchange (e.g. evicting a shared file's pages)."""
    observed: dict[str, dict[int, list[str]]] = {p.name: {0: [], 1: []} for p in probes}
    for _ in range(rounds):
        for bit in (0, 1):
            for p in probes:
                if prepare is not None:
                    prepare(p)
            for name, seen in exchange_once(probes, sender, receiver, bit).items():
                observed[name][bit].append(seen)
    return {name: Exchange(name, obs) for name, obs in observed.items()}


# Probes that run alone: they read host-wide activity, which anything else running at once adds to.
ALONE = frozenset({"inode-counter", "page-cache"})


def inventory(probes: list[ChannelProbe], sender, receiver, prepare=None, rounds: int = 1,
              alone_rounds: int = 2) -> dict[str, Exchange]:
    """Exchange over every probe: one batch of all the shared-inode, name and reading probes,
    `rounds` times for each bit (they are exact: once tells); the quota probes in a batch of their
    own (a quota the sender fills is, without isolation, the receiver's too: every watch there
    would fail); those of ALONE one by one, `alone_rounds` times for each bit (they are noisy: a
    pass over two rounds is a reproducible one). `prepare(probe)` runs on the host before each
    exchange of that probe."""
    quotas = [p for p in probes if p.name.startswith("quota:")]
    rest = [p for p in probes if p not in quotas and p.name not in ALONE]
    out: dict[str, Exchange] = {}
    for batch in (rest, quotas):
        if batch:
            out.update(exchange(batch, sender, receiver, rounds=rounds, prepare=prepare))
    for p in probes:
        if p.name in ALONE:
            out.update(exchange([p], sender, receiver, rounds=alone_rounds, prepare=prepare))
    return out


def moved(readings: Exchange) -> dict[str, set[str]]:
    """The host readings of a SCAN exchange that differed between the sender's bits: {path: distinct
    digests}. Empty when the receiver's view is fixed."""
    seen: dict[str, set[str]] = {}
    for reports in readings.observed.values():
        for report in reports:
            for path, value in json.loads(report).items():
                seen.setdefault(path, set()).add(value)
    return {p: v for p, v in seen.items() if len(v) > 1}


def evict(path: str, layers: list[str] = ()) -> bool:
    """Drop the pages of `path` from the host's page cache (the host may; sandboxes may not). A docker
    image's file is found in its `layers` (host dirs); False when the file is not found."""
    import os

    host = next((f"{d}{path}" for d in layers if d and os.path.exists(f"{d}{path}")), path)
    if not os.path.isfile(host):
        return False
    fd = os.open(host, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def image_layers(image: str) -> list[str]:
    """The host dirs of a docker image's layers (overlay2), top first."""
    import docker

    data = docker.from_env().images.get(image).attrs["GraphDriver"]["Data"]
    return [d for d in (*data.get("UpperDir", "").split(":"), *data.get("LowerDir", "").split(":")) if d]


# --- capacity of the channels that stay open ------------------------------------------------------
# A slotted transmission: both sides know the bits' start time T0 and slot length SLOT (in an attack
# they would agree on them in advance: the clock is shared); the sender acts in the slots of its
# 1-bits, the receiver measures once per slot and decodes by the median of its measurements.
SLOT_HEAD = r"""
def wait_until(t):
    while True:
        d = t - time.time()
        if d <= 0:
            return
        time.sleep(min(d, 0.05))
"""
CPU_SLOT_SEND = r"""
def worker():
    for i, b in enumerate(BITS):
        wait_until(T0 + i * SLOT)
        end = T0 + (i + 1) * SLOT
        while b and time.time() < end:
            pass
    os._exit(0)
kids = []
for _ in range(os.cpu_count() or 1):
    pid = os.fork()
    if pid == 0:
        worker()
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
"""
CPU_SLOT_RECV = r"""
out = []
for i in range(len(BITS)):
    start = T0 + i * SLOT
    wait_until(start + 0.2 * SLOT)
    n, end = 0, start + 0.8 * SLOT
    while time.time() < end:
        n += 1
    out.append(-n)  # fewer loops: the sender was spinning
print(json.dumps(out))
"""
INO_SLOT_SEND = r"""
for i, b in enumerate(BITS):
    wait_until(T0 + i * SLOT)
    end = T0 + (i + 1) * SLOT
    while b and time.time() < end:
        r, w = os.pipe(); os.close(r); os.close(w)
"""
INO_SLOT_RECV = r"""
import math
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
out = []
for i in range(len(BITS)):
    start = T0 + i * SLOT
    wait_until(start + 0.2 * SLOT)
    inos, end = [], start + 0.8 * SLOT
    while time.time() < end:
        r, w = os.pipe(); inos.append(os.fstat(r).st_ino); os.close(r); os.close(w)
    out.append(math.log1p(max(0, inos[-1] - inos[0] + 1 - len(inos))))
print(json.dumps(out))
"""
# Inode allocation on the disk both workspaces live on: the sender holds files or not, the
# receiver's next new file gets a higher or a lower inode number.
ALLOC_SLOT_SEND = r"""
for i, b in enumerate(BITS):
    wait_until(T0 + i * SLOT)
    names = [f".sdb-a{i}-{k}" for k in range(500)] if b else []
    for n in names:
        open(n, "w").close()
    wait_until(T0 + (i + 0.7) * SLOT)
    for n in names:
        os.unlink(n)
"""
ALLOC_SLOT_RECV = r"""
def probe():
    open(".sdb-r", "w").close()
    ino = os.stat(".sdb-r").st_ino
    os.unlink(".sdb-r")
    return ino
out = []
for i in range(len(BITS)):
    wait_until(T0 + (i + 0.5) * SLOT)
    held = probe()
    wait_until(T0 + (i + 0.95) * SLOT)
    out.append(held - probe())  # against the same slot once the sender let go: drift cancels
print(json.dumps(out))
"""
# Free blocks of the disk both workspaces are on (fstatfs, which docker's runtime keeps): the
# sender writes 4 MiB in the slots of its 1-bits, the receiver reads the free count while the
# sender holds them and once it has let go.
FREE_SLOT_SEND = r"""
for i, b in enumerate(BITS):
    wait_until(T0 + i * SLOT)
    if b:
        with open(".sdb-f", "wb") as f:
            f.write(b"x" * (4 << 20)); f.flush()
    wait_until(T0 + (i + 0.7) * SLOT)
    if b:
        os.unlink(".sdb-f")
"""
FREE_SLOT_RECV = r"""
def free():
    fd = os.open(".", os.O_RDONLY)
    try:
        return os.fstatvfs(fd).f_bfree
    finally:
        os.close(fd)
out = []
for i in range(len(BITS)):
    wait_until(T0 + (i + 0.5) * SLOT)
    held = free()
    wait_until(T0 + (i + 0.95) * SLOT)
    out.append(free() - held)  # the blocks the sender gave back
print(json.dumps(out))
"""
# Page-cache residency: the sender reads one byte of the pages of its 1-bits in a large shared
# file; the receiver times a one-byte read of every page (cached: microseconds; not: a disk read).
STRIDE = 16 * 4096  # pages far apart: the read-ahead of a lone one-byte read (4 pages) never reaches the next
PAGE_SEND = r"""
t = time.monotonic()
fd = os.open(TARGET, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead: one page a bit
for i, b in enumerate(BITS):
    if b:
        os.pread(fd, 1, i * STRIDE)
print(json.dumps(time.monotonic() - t))
"""
PAGE_RECV = r"""
import math
fd = os.open(TARGET, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
out, t = [], time.monotonic()
for i in range(len(BITS)):
    a = time.perf_counter_ns(); os.pread(fd, 1, i * STRIDE); out.append(-math.log(time.perf_counter_ns() - a + 1))
print(json.dumps({"us": out, "s": time.monotonic() - t}))
"""


@dataclass(frozen=True)
class Link:
    """A channel measured by sending bits: slotted (SLOT seconds a bit) or one-shot (page cache)."""

    name: str
    send: str
    receive: str
    slot_s: float = 0.0  # 0: one-shot, timed by the programs themselves
    target: str = ""

    def program(self, role: str, bits: list[int], t0: float) -> str:
        """The Python source run as `role` for `bits` starting at `t0`."""
        head = {"BITS": bits, "T0": t0, "SLOT": self.slot_s, "TARGET": self.target, "STRIDE": STRIDE,
                "STOP": "", "EXEMPT": ()}
        body = self.send if role == "send" else self.receive
        return PRELUDE + "".join(f"{k} = {v!r}\n" for k, v in head.items()) + SLOT_HEAD + body


def links(target: str) -> list[Link]:
    """The open channels whose capacity is measured (`target`: a large file both sandboxes see)."""
    return [
        Link("cpu-contention", CPU_SLOT_SEND, CPU_SLOT_RECV, 0.5),
        Link("inode-counter", INO_SLOT_SEND, INO_SLOT_RECV, 0.3),
        Link("disk-allocation", ALLOC_SLOT_SEND, ALLOC_SLOT_RECV, 0.5),
        Link("disk-free-blocks", FREE_SLOT_SEND, FREE_SLOT_RECV, 0.3),
        Link("page-cache", PAGE_SEND, PAGE_RECV, 0.0, target),
    ]


def _entropy(p: float) -> float:
    import math

    return 0.0 if p <= 0 or p >= 1 else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


@dataclass
class Transfer:
    """One transmission: the bits sent, those decoded, and the rate in bits per second."""

    link: str
    sent: list[int]
    got: list[int]
    seconds: float

    @property
    def errors(self) -> float:
        """The bit error rate."""
        return sum(a != b for a, b in zip(self.sent, self.got, strict=True)) / len(self.sent)

    @property
    def capacity(self) -> float:
        """Bits per second of the channel as a binary symmetric one at this error rate."""
        return len(self.sent) / self.seconds * (1 - _entropy(min(self.errors, 0.5)))


def _decode(values: list[float]) -> list[int]:
    """1 where a value falls in the upper of the two clusters that best split the readings (the
    programs make a 1-bit the larger reading)."""
    xs = sorted(values)
    n = len(xs)
    best, cut = None, xs[0]
    for k in range(1, n):  # split between xs[k-1] and xs[k]: the least within-cluster spread
        lo, hi = xs[:k], xs[k:]
        spread = sum((x - sum(lo) / k) ** 2 for x in lo) + sum((x - sum(hi) / (n - k)) ** 2 for x in hi)
        if best is None or spread < best:
            best, cut = spread, (xs[k - 1] + xs[k]) / 2
    return [1 if v > cut else 0 for v in values]


def transmit(link: Link, sender, receiver, bits: list[int], lead_s: float = 4.0) -> Transfer:
    """Send `bits` over `link` from one sandbox to the other, both running at once."""
    if link.slot_s:
        t0 = time.time() + lead_s
        done: list = []
        cmd = ["python3", "-c", link.program("send", bits, t0)]
        t = threading.Thread(target=lambda: done.append(sender.exec(cmd, timeout=lead_s + 60 + len(bits) * link.slot_s)),
                             daemon=True)
        t.start()
        got = receiver.exec(["python3", "-c", link.program("receive", bits, t0)],
                            timeout=lead_s + 60 + len(bits) * link.slot_s)
        t.join()
        if got.exit_code != 0 or not done or done[0].exit_code != 0:
            raise RuntimeError(f"{link.name}: {got.stderr[-500:]} {done[0].stderr[-500:] if done else ''}")
        values = json.loads(got.stdout)
        return Transfer(link.name, bits, _decode(values), len(bits) * link.slot_s)
    sent = sender.exec(["python3", "-c", link.program("send", bits, 0.0)], timeout=120)
    got = receiver.exec(["python3", "-c", link.program("receive", bits, 0.0)], timeout=120)
    if sent.exit_code != 0 or got.exit_code != 0:
        raise RuntimeError(f"{link.name}: {sent.stderr[-500:]} {got.stderr[-500:]}")
    data = json.loads(got.stdout)
    return Transfer(link.name, bits, _decode(data["us"]), json.loads(sent.stdout) + data["s"])
