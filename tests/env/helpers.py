"""Start `python -m sdebench.serve` as a child process on a free port (for HTTP tests)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BANNER = re.compile(r"listening on (http://(?:\[[0-9a-f:]+\]|[0-9.]+):\d+)")


@contextlib.contextmanager
def serve(tasks_dir: Path, *extra: str, startup_s: float = 60.0) -> Iterator[str]:
    """Run the server (127.0.0.1 unless `extra` has --host; free port, unsafe_local sandbox); yield its base URL."""
    argv = [sys.executable, "-m", "sdebench.serve", "--port", "0", "--tasks-dir", str(tasks_dir),
            "--sandbox", "unsafe_local", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    timer = threading.Timer(startup_s, proc.kill)  # a server that never prints its banner is killed
    timer.start()
    try:
        line = proc.stdout.readline()
    finally:
        timer.cancel()
    try:
        m = BANNER.search(line)
        if not m:
            proc.wait(timeout=10)
            raise RuntimeError(f"server did not start: {(line + proc.stderr.read()).strip()[:800]}")
        yield m.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
