"""Run one host process with a timeout that kills its whole process group, and capped output."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time

from sdebench.sandbox.base import (
    DEFAULT_OUTPUT_CAP,
    TRUNCATION_MARKER,
    WATCH_POLL_S,
    ExecResult,
    Watch,
    cap_output,
)


def run_process(
    argv: list[str],
    cwd: str,
    timeout: float,
    env: dict[str, str],
    output_cap: int = DEFAULT_OUTPUT_CAP,
    preexec_fn=None,
    watch: Watch | None = None,
) -> ExecResult:
    """Run `argv` in its own session; on timeout (or when `watch` expires) kill the group.

    Output goes to temp files, so a flood of output costs disk, not memory, and is read back
    capped; with a watch, new stdout bytes are handed to it as they appear."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
        timed_out = stopped = False
        try:
            if watch is None:
                proc.wait(timeout=timeout)
            else:
                timed_out, stopped = _supervise(proc, out, watch, start + timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc.pid)
            proc.wait()
        stdout, t1 = _read_capped(out, output_cap)
        stderr, t2 = _read_capped(err, output_cap)
    code = proc.returncode if not timed_out else 124
    return ExecResult(code, stdout, stderr, timed_out, t1 or t2, time.monotonic() - start, stopped)


def _supervise(proc: subprocess.Popen, out, watch: Watch, deadline: float) -> tuple[bool, bool]:
    """Poll `proc` until it exits, the deadline passes or the watch expires: (timed_out, stopped)."""
    fd = os.dup(out.fileno())  # an independent read offset on the same temp file
    try:
        pos = 0
        while True:
            try:
                proc.wait(timeout=WATCH_POLL_S)
                pos = _pump(fd, pos, watch)
                return False, False
            except subprocess.TimeoutExpired:
                pass
            pos = _pump(fd, pos, watch)
            if watch.expired():
                return True, True
            if time.monotonic() > deadline:
                return True, False
    finally:
        os.close(fd)


def _pump(fd: int, pos: int, watch: Watch) -> int:
    while True:
        chunk = os.pread(fd, 1 << 16, pos)
        if not chunk:
            return pos
        watch.feed(chunk)
        pos += len(chunk)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_capped(f, cap: int) -> tuple[str, bool]:
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    if size <= cap:
        return cap_output(f.read(), cap)
    half = cap // 2
    head = f.read(half)
    f.seek(size - half)
    tail = f.read(half)
    marker = TRUNCATION_MARKER.format(n=size - 2 * half)
    return head.decode(errors="replace") + marker + tail.decode(errors="replace"), True
