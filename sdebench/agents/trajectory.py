"""The trajectory of an episode: one JSON line per event, flushed as it happens."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


class Trajectory:
    """Appends events to a JSONL file; each line is flushed as written, so a killed process loses
    nothing already logged (the kernel keeps written data; only a machine crash could lose it)."""

    def __init__(self, path: Path | None, redact: tuple[str, ...] = ()):
        self.path = Path(path) if path is not None else None
        self.redact = tuple(r for r in redact if r)
        self.events = 0
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")

    def log(self, kind: str, **data: Any) -> None:
        """Record one event (message, tool call, tool result, grade, limit...)."""
        self.events += 1
        if self.path is None:
            return
        line = json.dumps({"i": self.events, "t": round(time.time(), 3), "kind": kind, **data}, default=str)
        for secret in self.redact:
            line = line.replace(secret, "[REDACTED]")
        with open(self.path, "a") as f:
            f.write(line + "\n")


class TrajectoryView:
    """What an agent holds of its episode's trajectory: it may log events and add values to redact,
    but not learn where the file is (its path names the task and the results dir)."""

    __slots__ = ("_trajectory",)

    def __init__(self, trajectory: Trajectory):
        self._trajectory = trajectory

    def log(self, kind: str, **data: Any) -> None:
        """Record one event."""
        self._trajectory.log(kind, **data)

    @property
    def redact(self) -> tuple[str, ...]:
        """Values replaced by [REDACTED] in every line written."""
        return self._trajectory.redact

    @redact.setter
    def redact(self, values: tuple[str, ...]) -> None:
        self._trajectory.redact = tuple(v for v in values if v)


def read(path: Path) -> list[dict[str, Any]]:
    """Load the events of a trajectory file, skipping a torn last line."""
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
