"""A commit of a synthetic repo, as families write it and the repo writer reads it.

Lives with the task record because the run path (the repo writer, imports of foreign tasks) needs it
without the generator toolkit; `sdebench.generation.spec` re-exports it for families.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Commit:
    """One commit: a message and the files it writes (content) or deletes (None)."""

    message: str
    files: dict[str, str | None]
