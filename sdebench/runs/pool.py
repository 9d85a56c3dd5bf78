"""Running a job's episodes: up to `concurrency` at once, each worker taking the next one nobody holds.

A job's episodes are tried in order. An episode another process (another sweep, another Slurm array
task) holds the claim on is not waited for: it is put aside and the next one is taken, so sweeps on
one `results_dir` share the work. When nothing is left untried, the put-aside episodes are taken
again, this time waiting for their claim (by then their holder has usually written the record,
which is then reused).

With `concurrency=1` the episodes run in the calling thread. With N > 1 they run in N worker
threads of this process: an episode waits on its model, its sandbox and its grading subprocesses
far more than it computes, so threads are enough, and every episode keeps its own sandbox, gateway,
workspace and trajectory. The first exception a worker raises stops the others from taking more
and is raised again here; Ctrl-C interrupts the running episodes (each releases its sandbox and
workspace on the way out) before the KeyboardInterrupt goes on.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import TypeVar

log = logging.getLogger("sdebench.run")

T = TypeVar("T")
# attempt(item, wait) -> True once the item is dealt with, False if another process holds it (only when not waiting)
Attempt = Callable[[T, bool], bool]
STOP_GRACE_S = 30.0  # how long interrupted episodes get to release their sandboxes


def concurrency_of(raw: object) -> int:
    """The `concurrency` config value as a positive int; ValueError (one line) otherwise."""
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise ValueError(f"concurrency must be a whole number >= 1, got {raw!r}")
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"concurrency must be a whole number >= 1, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"concurrency must be a whole number >= 1, got {raw!r}")
    return n


class _Queue:
    """The items still to try, then the ones put aside because another process held them."""

    def __init__(self, items: Sequence[T]):
        self.fresh: deque = deque(items)
        self.held: deque = deque()
        self.lock = threading.Lock()
        self.stop = False

    def next(self) -> tuple[T, bool] | None:
        """The next item and whether to wait for its claim; None when nothing is left (or on stop)."""
        with self.lock:
            if self.stop:
                return None
            if self.fresh:
                return self.fresh.popleft(), False
            if self.held:
                return self.held.popleft(), True
            return None

    def put_aside(self, item: T) -> None:
        """Come back to `item` once every fresh item has been tried."""
        with self.lock:
            self.held.append(item)


def _work(queue: _Queue, attempt: Attempt) -> None:
    while (got := queue.next()) is not None:
        item, wait = got
        if not attempt(item, wait):
            queue.put_aside(item)


def run_all(items: Sequence[T], attempt: Attempt, concurrency: int = 1) -> None:
    """Deal with every item through `attempt`, up to `concurrency` at once (see the module doc)."""
    queue = _Queue(items)
    if concurrency <= 1 or len(items) <= 1:
        _work(queue, attempt)
        return
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            _work(queue, attempt)
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread, which raises it
            with queue.lock:
                queue.stop = True
                errors.append(e)

    threads = [threading.Thread(target=worker, name=f"sdebench-episode-{i}", daemon=True)
               for i in range(min(concurrency, len(items)))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)  # a timed join keeps Ctrl-C deliverable to this thread
    except KeyboardInterrupt:
        _interrupt(queue, threads)
        raise
    if errors:
        raise errors[0]


def _interrupt(queue: _Queue, threads: list[threading.Thread]) -> None:
    """Stop taking items and raise KeyboardInterrupt in every worker; give them a grace period to clean up."""
    with queue.lock:
        queue.stop = True
    for t in threads:
        if t.is_alive() and t.ident is not None:
            # delivered at the worker's next Python instruction: its episode unwinds like a Ctrl-C'd one
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(KeyboardInterrupt))
    for t in threads:
        t.join(STOP_GRACE_S / max(len(threads), 1))
