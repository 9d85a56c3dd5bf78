"""Probes of the channels two concurrent sandboxes could use to talk to each other.

A probe is a pair of small Python programs run with `python3 -c` inside two sandboxes at once:
the sender sets up a state that encodes one bit (1: it acts, 0: it idles), says READY on its
stdout and holds the state until the host writes a stop file into its workspace; the receiver,
started once the sender is ready, prints one observation. A channel passes a bit when the
receiver's observations under bit 0 and bit 1 differ (each taken twice, and the same both times);
a closed channel gives one observation whatever the sender does.

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
    sys.stdout.write("READY\n"); sys.stdout.flush()
def hold():
    ready()
    while not os.path.exists(STOP):
        time.sleep(0.01)
def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
"""

# --- shared inodes -------------------------------------------------------------------------------
FLOCK_SEND = """
f = open(TARGET, "rb")
if BIT:
    fcntl.flock(f, fcntl.LOCK_SH)
hold()
"""
FLOCK_RECV = """
f = open(TARGET, "rb")
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print("free")
except OSError as e:
    print("busy", errno.errorcode.get(e.errno))
"""
# struct flock: l_type, l_whence, l_start, l_len, l_pid (native alignment).
POSIX_SEND = """
f = open(TARGET, "rb")
if BIT:
    fcntl.fcntl(f, CMD_SET, struct.pack("@hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0))
hold()
"""
POSIX_RECV = """
f = open(TARGET, "rb")
try:
    out = fcntl.fcntl(f, CMD_GET, struct.pack("@hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
    print("unlocked" if struct.unpack("@hhqqi", out)[0] == fcntl.F_UNLCK else "locked")
except OSError as e:
    print("error", errno.errorcode.get(e.errno))
"""
LEASE_SEND = """
f = open(TARGET, "rb") if BIT else None
hold()
"""
LEASE_RECV = """
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
    time.sleep(0.005)
"""
INOTIFY_RECV = """
fd = libc.inotify_init1(os.O_NONBLOCK)
if fd < 0 or libc.inotify_add_watch(fd, TARGET.encode(), 0x1 | 0x10 | 0x20) < 0:
    print("error", err()); sys.exit()
r, _, _ = select.select([fd], [], [], 1.0)
print("events" if r else "quiet")
"""
FANOTIFY_RECV = """
fd = libc.fanotify_init(0x200, os.O_RDONLY)  # FAN_REPORT_FID: allowed without privilege
AT_FDCWD = -100
if fd < 0 or libc.fanotify_mark(fd, 1, ctypes.c_uint64(0x1 | 0x10 | 0x20), AT_FDCWD, TARGET.encode()) < 0:
    print("error", err()); sys.exit()
r, _, _ = select.select([fd], [], [], 1.0)
print("events" if r else "quiet")
"""
ATIME_RECV = """
print(os.stat(TARGET).st_atime_ns)
"""

# --- host-wide readings --------------------------------------------------------------------------
# The sender's activity: memory, threads, pipes, an OFD lock and a key of its own, disk writes, CPU.
BUSY_SEND = r"""
import threading
keep = []
if BIT:
    keep.append(bytearray(192 * 1024 * 1024))
    for i in range(0, len(keep[0]), 4096):
        keep[0][i] = 1
    ev = threading.Event()
    ts = [threading.Thread(target=ev.wait, daemon=True) for _ in range(64)]
    for t in ts: t.start()
    keep += [os.pipe() for _ in range(200)]
    lf = open("/tmp/sdb-probe-lock", "wb")
    fcntl.fcntl(lf, 37, struct.pack("@hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLK
    keep.append(libc.syscall(248, b"user", b"sdb-busy", b"x" * 64, 64, -4))  # add_key to the user keyring
    with open("big.bin", "wb") as f:
        f.write(os.urandom(8 * 1024 * 1024)); f.flush(); os.fsync(f.fileno())
    os.unlink("big.bin")
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); keep.append(s)
ready()
while not os.path.exists(STOP):
    if BIT:
        x = 0
        for i in range(200000): x += i
    else:
        time.sleep(0.01)
if BIT and keep[-2] > 0:
    libc.syscall(250, 3, keep[-2])  # KEYCTL_REVOKE
"""
# Files that change whatever anyone does (random by design) or belong to the reader alone.
SCAN_EXEMPT = ("/proc/sys/kernel/random/uuid",)
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
        if d.startswith("/sys") and d.count("/") > 7:
            dirs[:] = []
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
with open(".sdb-scan.json", "w") as f:
    json.dump(out, f)
print(len(out))
"""
SYSINFO_RECV = r"""
buf = ctypes.create_string_buffer(256)
if libc.sysinfo(buf) != 0:
    print("error", err()); sys.exit()
vals = struct.unpack_from("@lLLLLLLLLLH", buf)
print("procs>=%d" % (vals[10] // 48 * 48))
"""
# The host-wide inode counter of pipes and sockets (get_next_ino, handed out to each CPU in
# batches of 1024): the receiver counts the numbers others took while it made pipes for 0.3 s.
INO_RECV = r"""
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
inos = []
t = time.monotonic()
while time.monotonic() - t < 0.3:
    r, w = os.pipe(); inos.append(os.fstat(r).st_ino); os.close(r); os.close(w)
others = inos[-1] - inos[0] + 1 - len(inos)
print("many" if others > 2000 else "few")
"""
INO_SEND = r"""
ready()
while not os.path.exists(STOP):
    if BIT:
        for _ in range(2000):
            r, w = os.pipe(); os.close(r); os.close(w)
    else:
        time.sleep(0.01)
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
keys = [libc.syscall(248, b"user", b"sdb-probe", b"x", 1, k) for k in (-4, -5)] if BIT else []  # add_key
hold()
for k in keys:
    if k > 0:
        libc.syscall(250, 3, k)  # KEYCTL_REVOKE
"""
KEY_RECV = """
# keyctl(KEYCTL_SEARCH, keyring, "user", "sdb-probe", 0)
found = [libc.syscall(250, 10, k, b"user", b"sdb-probe", 0) >= 0 for k in (-4, -5)]
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
class Probe:
    """One channel: the sender's and the receiver's program and the shared path they use, if any."""

    name: str
    send: str
    receive: str
    target: str = ""
    params: dict = field(default_factory=dict)

    def program(self, role: str, bit: int, stop: str) -> str:
        """The Python source run as `role` ('send' or 'receive')."""
        head = {"BIT": bit, "TARGET": self.target, "STOP": stop, "EXEMPT": SCAN_EXEMPT, **self.params}
        body = self.send if role == "send" else self.receive
        return PRELUDE + "".join(f"{k} = {v!r}\n" for k, v in head.items()) + body


def inode_probes(target: str, label: str) -> list[Probe]:
    """Every probe that meets on one shared file `target` (named `label` in reports)."""
    return [
        Probe(f"flock:{label}", FLOCK_SEND, FLOCK_RECV, target),
        Probe(f"posix-lock:{label}", POSIX_SEND, POSIX_RECV, target, {"CMD_SET": 6, "CMD_GET": 5}),
        Probe(f"ofd-lock:{label}", POSIX_SEND, POSIX_RECV, target, {"CMD_SET": 37, "CMD_GET": 36}),
        Probe(f"lease:{label}", LEASE_SEND, LEASE_RECV, target),
        Probe(f"inotify:{label}", TOUCH_SEND, INOTIFY_RECV, target),
        Probe(f"fanotify:{label}", TOUCH_SEND, FANOTIFY_RECV, target),
        Probe(f"atime:{label}", TOUCH_SEND, ATIME_RECV, target),
    ]


def namespace_probes() -> list[Probe]:
    """Probes of names two sandboxes could share: IPC objects, sockets, keys, the hostname."""
    return [
        Probe("sysv-ipc", SYSV_SEND, SYSV_RECV),
        Probe("posix-mqueue", MQ_SEND, MQ_RECV),
        Probe("dev-shm", SHM_SEND, SHM_RECV),
        Probe("abstract-unix-socket", ABSTRACT_SEND, ABSTRACT_RECV),
        Probe("loopback-tcp", TCP_SEND, TCP_RECV),
        Probe("keyring", KEY_SEND, KEY_RECV),
        Probe("hostname", HOSTNAME_SEND, HOSTNAME_RECV),
    ]


def counter_probes() -> list[Probe]:
    """Probes of host-wide counters read through a syscall rather than a file."""
    return [
        Probe("sysinfo", BUSY_SEND, SYSINFO_RECV),
        Probe("inode-counter", INO_SEND, INO_RECV),
    ]


SCAN = Probe("host-readings", BUSY_SEND, SCAN_RECV)


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
    """What the receiver observed with the sender holding bit 0 and bit 1 (twice each)."""

    probe: str
    observed: dict[int, list[str]]

    @property
    def passes(self) -> bool:
        """True when the observation tells the bits apart, reproducibly."""
        zero, one = self.observed[0], self.observed[1]
        return len(set(zero)) == 1 and len(set(one)) == 1 and zero[0] != one[0]


def exchange_once(probe: Probe, sender, receiver, bit: int, timeout: float = 60.0) -> str:
    """Run the sender with `bit` and, once it is ready, the receiver; return the receiver's observation."""
    stop = f".sdb-stop-{secrets.token_hex(4)}"
    watch = _Ready()
    result: list = []
    cmd = ["python3", "-c", probe.program("send", bit, stop)]
    t = threading.Thread(target=lambda: result.append(sender.exec(cmd, timeout=timeout, watch=watch)), daemon=True)
    t.start()
    try:
        if not watch.seen.wait(timeout):
            raise RuntimeError(f"{probe.name}: the sender never got ready: {result[0].stderr[-500:] if result else ''}")
        got = receiver.exec(["python3", "-c", probe.program("receive", bit, stop)], timeout=timeout)
        if got.exit_code != 0:
            raise RuntimeError(f"{probe.name}: the receiver failed: {got.stderr[-800:]}")
        return got.stdout.strip()
    finally:
        sender.write_file(stop, "")
        t.join(timeout)
        if result and result[0].exit_code != 0:
            raise RuntimeError(f"{probe.name}: the sender failed: {result[0].stderr[-800:]}")


def exchange(probe: Probe, sender, receiver, rounds: int = 2) -> Exchange:
    """Observe the receiver under bit 0 and bit 1, `rounds` times each, interleaved."""
    observed: dict[int, list[str]] = {0: [], 1: []}
    for _ in range(rounds):
        for bit in (0, 1):
            observed[bit].append(exchange_once(probe, sender, receiver, bit))
    return Exchange(probe.name, observed)


def changed_readings(sender, receiver, rounds: int = 2) -> dict[str, set[str]]:
    """Every host reading (a file under /proc or /sys, sysinfo()) that differed while the sender
    worked or idled: {path: distinct digests}. Empty when the receiver's view is fixed."""
    seen: dict[str, set[str]] = {}
    for _ in range(rounds):
        for bit in (0, 1):
            exchange_once(SCAN, sender, receiver, bit)
            for path, value in json.loads(receiver.read_file(".sdb-scan.json")).items():
                seen.setdefault(path, set()).add(value)
            time.sleep(0.2)
    return {p: v for p, v in seen.items() if len(v) > 1}
