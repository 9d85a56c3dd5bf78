"""A real task's memory corpus and its decisive item, for the memory-system tests."""

from __future__ import annotations

from pathlib import Path

from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import MemoryItem, corpus_from_repo
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task, load

TASK = "billing-rounding-v0-K"


def corpus(tasks_dir: Path, dest: Path, task_id: str = TASK) -> tuple[Task, list[MemoryItem], str]:
    """The task, the memory items of its full repo, and the id of its decisive item."""
    task = load(tasks_dir / task_id)
    items = corpus_from_repo(repo_mod.unbundle(task.bundle, dest))
    (decisive,) = [d.id for d in decisive_items(task)]
    return task, items, decisive
