"""The system calls every sandbox refuses, as one rule set: a classic BPF program for bubblewrap
(`--seccomp FD`) and a seccomp profile for Docker (`security_opt`), built from the same table.

What is refused, and why (each entry says it):

- host-wide readings that no namespace covers: `sysinfo()` (load, free memory and the process
  count of the whole host), `statfs()` (free blocks and inodes of a file system another sandbox
  writes to: the host disk under every workspace);
- the kernel keyrings (not namespaced: keys and per-uid quotas are shared by every sandbox);
- page-cache residency probes (`cachestat`, `mincore`, `preadv2(RWF_NOWAIT)`) and explicit
  eviction (`fadvise(DONTNEED)`, `madvise(COLD/PAGEOUT)`, `process_madvise`): with them two
  sandboxes reading the same system file would signal through its cached pages at memory speed.
  Eviction is advisory, so it becomes a no-op that succeeds;
- `io_uring` (its operations bypass this filter), `fanotify` and `perf_event_open` (precise
  counters), the kernel log;
- defence in depth, as Docker's default profile does for an unprivileged container: new
  namespaces, mounts, BPF, `userfaultfd`, kernel modules and kexec, raw I/O ports, time setting,
  swap, reboot, accounting, quotas and file handles.

Programs see ENOSYS (the call does not exist here) where they commonly fall back (`clone3`,
`io_uring`, `sysinfo`), EPERM where a privilege would be missing anyway.
"""

from __future__ import annotations

import errno
import json
import platform
import struct
from dataclasses import dataclass

from sdebench.sandbox.base import SandboxError

# Namespace flags of clone(2) (not CLONE_NEWTIME: its bit is the exit signal's in clone()).
CLONE_NS_FLAGS = 0x7E020000
RWF_NOWAIT = 0x8
POSIX_FADV_DONTNEED = 4
MADV_COLD, MADV_PAGEOUT = 20, 21


@dataclass(frozen=True)
class Rule:
    """Refuse `name` with `errno_ret` (0: skip the call and report success), always or when its
    argument `arg` has any bit of `mask` set / equals one of `values`."""

    name: str
    errno_ret: int
    why: str
    arg: int | None = None
    mask: int = 0
    values: tuple[int, ...] = ()
    docker: bool = True  # also in the docker profile


def _always(names: str, err: int, why: str) -> list[Rule]:
    return [Rule(n, err, why) for n in names.split()]


RULES: tuple[Rule, ...] = (
    *_always("sysinfo", errno.ENOSYS, "host-wide load, free memory and process count"),
    *_always("statfs", errno.ENOSYS, "free blocks and inodes of file systems other sandboxes write to"),
    # runc itself calls fstatfs after loading the filter (to check /proc before it execs): docker keeps it.
    Rule("fstatfs", errno.ENOSYS, "free blocks and inodes of file systems other sandboxes write to", docker=False),
    *_always("add_key request_key keyctl", errno.ENOSYS, "keyrings and key quotas are shared by every sandbox"),
    *_always("cachestat mincore process_madvise", errno.ENOSYS, "page-cache residency of shared files"),
    Rule("preadv2", errno.EOPNOTSUPP, "a non-blocking read tells cached pages apart", arg=5, mask=RWF_NOWAIT),
    Rule("fadvise64", 0, "evicting shared files' pages (advisory: a no-op)", arg=3, values=(POSIX_FADV_DONTNEED,)),
    Rule("madvise", 0, "evicting shared files' pages (advisory: a no-op)", arg=2, values=(MADV_COLD, MADV_PAGEOUT)),
    *_always("io_uring_setup io_uring_enter io_uring_register", errno.ENOSYS, "its operations bypass this filter"),
    *_always("fanotify_init fanotify_mark", errno.ENOSYS, "watches on shared files"),
    *_always("perf_event_open", errno.ENOSYS, "precise hardware and scheduler counters"),
    *_always("syslog", errno.EPERM, "the host's kernel log"),
    Rule("clone", errno.EPERM, "no new namespaces", arg=0, mask=CLONE_NS_FLAGS),
    *_always("clone3", errno.ENOSYS, "its flags cannot be inspected; callers fall back to clone"),
    *_always("unshare setns mount umount2 pivot_root open_tree move_mount fsopen fsconfig fsmount fspick "
             "mount_setattr open_tree_attr", errno.EPERM, "no new namespaces or mounts"),
    *_always("bpf userfaultfd kexec_load kexec_file_load init_module finit_module delete_module create_module "
             "get_kernel_syms query_module iopl ioperm acct swapon swapoff reboot settimeofday clock_settime "
             "quotactl quotactl_fd lookup_dcookie name_to_handle_at open_by_handle_at uselib ustat sysfs _sysctl "
             "vhangup nfsservctl", errno.EPERM, "kernel interfaces a sandbox has no business with"),
)

# x86_64 system call numbers of the names above.
X86_64 = {
    "sysinfo": 99, "statfs": 137, "fstatfs": 138, "add_key": 248, "request_key": 249, "keyctl": 250, "cachestat": 451, "mincore": 27,
    "process_madvise": 440, "preadv2": 327, "fadvise64": 221, "madvise": 28, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "fanotify_init": 300, "fanotify_mark": 301,
    "perf_event_open": 298, "syslog": 103, "clone": 56, "clone3": 435, "unshare": 272, "setns": 308,
    "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "open_tree_attr": 467, "bpf": 321,
    "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "create_module": 174, "get_kernel_syms": 177, "query_module": 178, "iopl": 172,
    "ioperm": 173, "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169, "settimeofday": 164,
    "clock_settime": 227, "quotactl": 179, "quotactl_fd": 443, "lookup_dcookie": 212, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "uselib": 134, "ustat": 136, "sysfs": 139, "_sysctl": 156, "vhangup": 153,
    "nfsservctl": 180,
}
AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000

# Classic BPF opcodes and seccomp return values.
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
NR_OFFSET, ARCH_OFFSET, ARGS_OFFSET = 0, 4, 16


def supported() -> bool:
    """True when this machine's architecture has a BPF program here (x86_64)."""
    return platform.machine() in ("x86_64", "amd64")


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def bpf_program(rules: tuple[Rule, ...] = RULES) -> bytes:
    """The rules as a classic BPF program (struct sock_filter[]) for `bwrap --seccomp FD`."""
    if not supported():
        raise SandboxError(f"no seccomp program for {platform.machine()}: set sandbox.seccomp=false")
    prog = [
        _insn(LD_ABS, ARCH_OFFSET),
        _insn(JEQ, AUDIT_ARCH_X86_64, jt=1),
        _insn(RET, RET_KILL_PROCESS),  # another ABI (i386 through int 0x80): its numbers differ
        _insn(LD_ABS, NR_OFFSET),
        _insn(JGE, X32_BIT, jf=1),
        _insn(RET, RET_ERRNO | errno.ENOSYS),  # the x32 ABI: the same calls under other numbers
    ]
    for r in rules:
        action = _insn(RET, RET_ERRNO | r.errno_ret)
        nr = X86_64[r.name]
        if r.arg is None:
            prog += [_insn(JEQ, nr, jf=1), action]
            continue
        # Load the argument's low 32 bits (every filtered argument is an int or a flag word), test it,
        # and reload the call number when it does not match.
        tests = [(JSET, r.mask)] if r.mask else [(JEQ, v) for v in r.values]
        n = len(tests)
        prog.append(_insn(JEQ, nr, jf=n + 3))
        prog.append(_insn(LD_ABS, ARGS_OFFSET + 8 * r.arg))
        for i, (op, k) in enumerate(tests):
            prog.append(_insn(op, k, jt=n - 1 - i, jf=1 if i == n - 1 else 0))
        prog += [action, _insn(LD_ABS, NR_OFFSET)]
    prog.append(_insn(RET, RET_ALLOW))
    return b"".join(prog)


def docker_profile(rules: tuple[Rule, ...] = RULES) -> str:
    """The rules as a Docker seccomp profile (JSON for `security_opt=["seccomp=..."]`): everything
    else allowed; the container also runs without capabilities, as an unprivileged user."""
    syscalls = []
    for r in rules:
        if not r.docker:
            continue
        entry: dict = {"names": [r.name], "action": "SCMP_ACT_ERRNO", "errnoRet": r.errno_ret or 0}
        if r.errno_ret == 0:
            # Docker reads errnoRet 0 as "unset" (EPERM): an advisory call refused is still harmless.
            entry.pop("errnoRet")
        if r.arg is None:
            syscalls.append(entry)
            continue
        if r.mask:
            # One rule per bit: the engine compares masked values for equality only.
            bits = [1 << b for b in range(32) if r.mask >> b & 1]
            conds = [{"index": r.arg, "value": b, "valueTwo": b, "op": "SCMP_CMP_MASKED_EQ"} for b in bits]
        else:
            conds = [{"index": r.arg, "value": v, "op": "SCMP_CMP_EQ"} for v in r.values]
        syscalls += [{**entry, "args": [c]} for c in conds]
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],  # other ABIs: refused whole by the engine
        "syscalls": syscalls,
    }
    return json.dumps(profile)
