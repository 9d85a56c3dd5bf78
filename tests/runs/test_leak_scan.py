"""Nothing an agent can see names its task: for every delivery and backend, an agent scans its
working directory, environment, every file under the workspace (`.git` included, objects
decompressed), `git reflog`, `git config -l` and its mount table for the task id, family,
variant, bundle and task-store path. A control token it plants itself must be found, so the scan
is shown to work. And two episodes of one task running at once (one with its full memory) pass
each other nothing: what one plants wherever it can write, the other does not read."""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path

import pytest

from sdebench.agents.base import Capabilities, RunResult, Usage
from sdebench.components import DELIVERIES
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.sandbox.base import WORKDIR, SandboxError
from sdebench.tasks import record as task_mod
from sdebench.tasks import repo as repo_mod
from tests.sandbox.conftest import docker_image  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[2]
TASK = "billing-rounding-v0-H"  # H: the full delivery carries the whole history
BACKENDS = ("local", "docker", "unsafe_local")


class ScanAgent:
    """Runs the scan through its bash tool, then submits."""

    name = "scanner"
    capabilities = Capabilities()

    def __init__(self, patterns: list[str], control: str):
        self.patterns, self.control = patterns, control
        self.usage = Usage()
        self.out: dict[str, str] = {}

    def start(self, ctx) -> None:
        self.tools = ctx.toolbox

    def close(self) -> None:
        pass

    def bash(self, key: str, cmd: str) -> None:
        self.out[key] = self.tools.call("bash", {"command": cmd}).output

    def run(self) -> RunResult:
        # Each command may run in a fresh sandbox (fresh /tmp): the patterns go on the command line.
        pats = " ".join(f"-e '{p}'" for p in [*self.patterns, self.control])
        self.bash("setup", f"printf '%s' '{self.control}' > control-file.txt; echo ok")
        self.bash("pwd", "pwd")
        self.bash("hits", f"{{ pwd; env; git reflog; git config -l; cat /proc/self/mountinfo; hostname; "
                          f"grep -raoF {pats} . ; git cat-file --batch-all-objects --batch; }} 2>&1 | "
                          f"grep -aoF {pats} | sort | uniq -c")
        self.bash("reflog", "git reflog | wc -l; git remote | wc -l; ls .git")
        return RunResult("submitted", 1)

    def feedback(self, text: str) -> None:
        pass


def _factory(backend: str, request, tasks_dir: Path):
    if backend == "local":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap is not installed")
        return make_factory({"backend": "local", "tasks_dir": str(tasks_dir)})
    if backend == "docker":
        return make_factory({"backend": "docker", "image": request.getfixturevalue("docker_image")})
    return make_factory({"backend": "unsafe_local"})


@pytest.mark.parametrize("delivery", sorted(DELIVERIES))
@pytest.mark.parametrize("backend", [pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else
                                                  [pytest.mark.bwrap] if b == "local" else []) for b in BACKENDS])
def test_nothing_the_agent_sees_names_its_task(backend, delivery, request, tmp_path):
    tasks_dir = ROOT / "tasks"
    task = task_mod.load(tasks_dir / TASK)
    content = "\n".join(repo_mod.read_tree(repo_mod.unbundle(task.bundle, tmp_path / "probe")).values())
    names = [task.id, task.family, f"-v{task.variant}-", str(tasks_dir.resolve()), str(task.path.resolve()),
             "repo.bundle", "/tasks/"]
    assert not [n for n in names if n in content], "precondition: the task's own files do not spell its names"
    control = "ctl" + secrets.token_hex(8)
    agent = ScanAgent(names, control)
    factory = _factory(backend, request, tasks_dir)
    try:
        cfg = {"delivery": {"name": delivery}, "max_interventions": 0, "tools": {"max_output_chars": 100_000},
               "grading": {"feedback_hidden": "binary"}}
        rec = run_episode(task, cfg, factory, agent=agent, work_root=tmp_path / "work")
    finally:
        factory.cleanup()
    assert rec.outcome.error is None and rec.outcome.stop_reason == "max_interventions", rec
    assert agent.out["setup"].strip().endswith("ok")
    hits = agent.out["hits"]
    assert control in hits, f"the scan found not even its own control token: {hits!r}"
    leaked = [n for n in names if n in hits]
    assert leaked == [], f"{backend}/{delivery}: the agent can see {leaked}: {hits}"
    out = agent.out["reflog"].split("stdout:", 1)[-1].split()
    assert out[:2] == ["0", "0"], agent.out["reflog"]  # no reflog entry, no remote
    for gone in ("logs", "FETCH_HEAD", "ORIG_HEAD", "description"):
        assert gone not in out[2:]
    pwd = agent.out["pwd"].split("stdout:", 1)[-1].strip()
    assert pwd == WORKDIR if backend != "unsafe_local" else Path(pwd).name == "repo"


# --- what two episodes running at once can pass each other --------------------------------------
# The sender plants the task's fact, between two markers, everywhere it can write outside its
# workspace (temp and shared-memory dirs, a System V message, abstract socket names) and holds it
# there; the receiver, an episode of the same task running beside it, reads all it can outside its
# own workspace and reports every marker it finds. It plants a control of its own the same way
# first, which its scan must find. The host starts the scan once the sender says (in its workspace)
# that the plant is in place, and lets the sender go once the scan is over.
PLANTED, STOP = ".sdb-planted", ".sdb-stop"
PLANT = r"""
import ctypes, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
payload, hold = sys.argv[1], float(sys.argv[2])
keep, files = [], []
for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue"):
    try:
        with open(f"{d}/.plant-{os.getpid()}", "w") as f:
            f.write(payload)
        files.append(f.name)
    except OSError:
        pass
q = libc.msgget(0x5DB00000 | hash(payload) & 0xFFFF, 0o1666)
if q >= 0:
    msg = ctypes.create_string_buffer(8 + len(payload)); ctypes.memmove(ctypes.addressof(msg), (1).to_bytes(8, "little"), 8)
    ctypes.memmove(ctypes.addressof(msg) + 8, payload.encode(), len(payload))
    libc.msgsnd(q, msg, len(payload), 0o4000)
for i in range(0, len(payload), 90):
    s = socket.socket(socket.AF_UNIX); s.bind("\0" + payload[i:i + 90]); s.listen(); keep.append(s)
print("planted", time.time(), flush=True)
with open(".sdb-planted", "w") as f:
    f.write("planted")
end = time.time() + hold
while time.time() < end and not os.path.exists(".sdb-stop"):
    time.sleep(0.05)
for f in files:  # leave nothing behind (without a sandbox, on the host itself)
    os.unlink(f)
if q >= 0 and hold:
    libc.msgctl(q, 0, None)  # IPC_RMID
"""
SCAN_ALL = r"""
import ctypes, os, stat, sys, time
start = time.time()
libc = ctypes.CDLL(None, use_errno=True)
markers = sys.argv[1:]
seen = set()
def look(data):
    for m in markers:
        if m.encode() in data:
            seen.add(m)
budget = [30000]  # files; a walk visits each dir's own files before its subdirs
for root in ("/tmp", "/var/tmp", "/dev", "/run", "/etc", "/proc", "/opt/agent", "/home", "/root", "/mnt", "/srv"):
    for d, dirs, files in os.walk(root):
        if d == "/proc":
            dirs[:] = [x for x in dirs if not x.isdigit()]  # the processes of this sandbox only
        if d.count("/") > 5 or budget[0] <= 0:
            dirs[:] = []
        budget[0] -= len(files)
        for name in files:
            p = os.path.join(d, name)
            if p in ("/proc/kmsg", "/proc/kcore"):
                continue  # the kernel log blocks its reader; all of memory is not a file to read
            try:
                if stat.S_ISREG(os.lstat(p).st_mode):  # not a device or a fifo: a read could block
                    with open(p, "rb") as f:
                        look(f.read(1 << 20))
            except OSError:
                pass
buf = ctypes.create_string_buffer(65536)
for line in open("/proc/sysvipc/msg").read().splitlines()[1:]:
    q = int(line.split()[1])
    while True:
        n = libc.msgrcv(q, buf, 65536, 0, 0o4000)  # IPC_NOWAIT
        if n < 0:
            break
        look(buf.raw[8:8 + n])
q = libc.msgget(0x5DB00000 | hash(markers[-1]) & 0xFFFF, 0)  # the queue of its own control (last)
if q >= 0:
    libc.msgctl(q, 0, None)  # the host keeps queues of an unsandboxed run
print("scanned", start, " ".join(sorted(seen)))
"""


class PairAgent:
    """Runs one command through its bash tool (the host's `before` first, if given; `after` once it
    is over, whatever happened), then submits."""

    name = "pair"
    capabilities = Capabilities()

    def __init__(self, command: str, started=None, before=None, after=None):
        self.command, self.started, self.before, self.after = command, started, before, after
        self.usage = Usage()
        self.out = ""

    def start(self, ctx) -> None:
        self.tools = ctx.toolbox

    def run(self) -> RunResult:
        if self.started is not None:
            self.started.set()
        try:
            if self.before is not None:
                self.before()
            self.out = self.tools.call("bash", {"command": self.command, "timeout": 240}).output
        finally:
            if self.after is not None:
                self.after()
        return RunResult("submitted", 1)

    def feedback(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


class Opened:
    """A factory that keeps the sandboxes it opens, so the host side of the test reaches the
    sender's (the agent itself holds only its tools)."""

    def __init__(self, factory):
        self.factory, self.boxes = factory, []

    def open(self, workspace, **kw):
        box = self.factory.open(workspace, **kw)
        self.boxes.append((Path(workspace), box))
        return box

    def box_under(self, root: Path):
        """The first sandbox opened on a workspace below `root` (an episode's own, before its grades)."""
        return next(box for ws, box in self.boxes if root in ws.parents)

    def __getattr__(self, name: str):
        return getattr(self.factory, name)


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else
                                                  [pytest.mark.bwrap] if b == "local" else []) for b in BACKENDS])
def test_two_episodes_running_at_once_pass_each_other_nothing(backend, request, tmp_path):
    """A full-memory episode and a no-memory episode of one task, side by side in one sweep."""
    import shlex
    import threading

    tasks_dir = ROOT / "tasks"
    task = task_mod.load(tasks_dir / TASK)
    marker, control = "mk" + secrets.token_hex(6), "ct" + secrets.token_hex(6)
    payload = f"{marker}{' '.join(task.fact_tokens)}{marker}"
    started = threading.Event()
    # The sender holds its plant until the receiver's scan is over (at most 120 s).
    sender = PairAgent(f"python3 -c {shlex.quote(PLANT)} {shlex.quote(payload)} 120", started=started)

    factory = Opened(_factory(backend, request, tasks_dir))

    def wait_for_plant() -> None:
        assert started.wait(300), "the sender never started"
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                if factory.box_under(tmp_path / "full").read_file(PLANTED) == "planted":
                    return
            except (OSError, SandboxError):
                pass
            time.sleep(0.2)

    scan = (f"python3 -c {shlex.quote(PLANT)} {control} 0 && "
            f"python3 -c {shlex.quote(SCAN_ALL)} {marker} {control}")
    receiver = PairAgent(scan, before=wait_for_plant,
                         after=lambda: factory.box_under(tmp_path / "full").write_file(STOP, ""))
    cfg = {"max_interventions": 0, "tools": {"max_output_chars": 100_000}, "grading": {"feedback_hidden": "binary"}}
    records: dict[str, object] = {}

    def episode(key: str, delivery: str, agent) -> None:
        records[key] = run_episode(task, {**cfg, "delivery": {"name": delivery}}, factory, agent=agent,
                                   work_root=tmp_path / key)

    try:
        threads = [threading.Thread(target=episode, args=("full", "full", sender)),
                   threading.Thread(target=episode, args=("none", "squashed", receiver))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    finally:
        factory.cleanup()
    assert set(records) == {"full", "none"}, records
    assert all(r.outcome.error is None for r in records.values()), {k: (r.outcome.error, r.outcome.stop_reason) for k, r in records.items()}
    assert "planted" in sender.out and "scanned" in receiver.out, (sender.out[-1500:], receiver.out[-1500:])
    planted = float(sender.out.split("planted", 1)[1].split()[0])
    scanned_line = receiver.out.split("scanned", 1)[1].split("\n", 1)[0].split()
    assert planted < float(scanned_line[0]) < planted + 100, "the scan did not run while the fact was planted"
    found = set(scanned_line[1:])
    assert control in found, f"the scan found not even its own control: {receiver.out[-2000:]}"
    if backend == "unsafe_local":
        assert marker in found, "without isolation the fact passes: the scan would see it"
    else:
        assert marker not in found, f"{backend}: the no-memory episode read the other's fact"
