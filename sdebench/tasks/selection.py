"""Selecting tasks: the one comma-list parser and the one task selector.

Every command that picks tasks (`sdebench.run`, `sdebench.stream`, `sdebench.interop`, the
environment's task store) calls `select`; every comma list on a command line or in config
(`select.family=a,b`, `--sources K,none`) goes through `comma_list`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from sdebench.tasks.artifacts import BOTTLENECKS, COMPETENCIES, SOURCES, TIERS
from sdebench.tasks.record import Task, TaskError, discover, load

ANY = "all"  # a filter value meaning "no filter"


def comma_list(value: str | int | Iterable[str | int] | None) -> tuple[str, ...] | None:
    """A filter value as a tuple of stripped strings: `'a, b'` and `['a', 'b']` alike; None, '', [] and 'all' mean any (None)."""
    if value is None:
        return None
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, Iterable):
        items = [str(v) for v in value]
    else:
        items = [str(value)]
    out = tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
    return None if not out or ANY in out else out


def _check(name: str, values: tuple[str, ...] | None, allowed: tuple[str, ...]) -> None:
    bad = [v for v in values or () if v not in allowed]
    if bad:
        raise TaskError(f"unknown {name} {', '.join(map(repr, bad))} (choose {', '.join(allowed)}, or {ANY})")


def select(
    tasks_dir: str | Path,
    *,
    family: str | Iterable[str] | None = None,
    variant: str | int | Iterable[str | int] | None = None,
    source: str | Iterable[str] | None = None,
    bottleneck: str | Iterable[str] | None = None,
    ids: str | Iterable[str] | None = None,
    competency: str | Iterable[str] | None = None,
    tier: str | Iterable[str] | None = None,
    on_error: Callable[[str], None] | None = None,
) -> list[Task]:
    """The tasks of `tasks_dir` matching every given filter (comma lists; None or 'all' = any), sorted by dir name.

    `tier` (recall, hard) is the tier derived from a task's competency. A missing tasks dir, an
    unknown source, bottleneck, competency or tier raise TaskError. A malformed task dir,
    and an id in `ids` that no task has, raise TaskError too, unless `on_error` is given: then it
    receives the one-line message and the selection goes on without that task.
    """
    wanted = {
        "family": comma_list(family),
        "variant": comma_list(variant),
        "source": comma_list(source),
        "bottleneck": comma_list(bottleneck),
        "id": comma_list(ids),
        "competency": comma_list(competency),
        "tier": comma_list(tier),
    }
    _check("source", wanted["source"], SOURCES)
    _check("bottleneck", wanted["bottleneck"], BOTTLENECKS)
    _check("competency", wanted["competency"], COMPETENCIES)
    _check("tier", wanted["tier"], TIERS)
    filters = {k: set(v) for k, v in wanted.items() if v is not None}

    def problem(message: str) -> None:
        if on_error is None:
            raise TaskError(message)
        on_error(message)

    out: list[Task] = []
    seen: set[str] = set()
    for d in discover(tasks_dir):
        try:
            task = load(d)
        except TaskError as e:
            problem(str(e))
            continue
        seen.add(task.id)
        if all(str(getattr(task, k)) in v for k, v in filters.items()):
            out.append(task)
    for missing in [i for i in wanted["id"] or () if i not in seen]:
        problem(f"no task {missing!r} in {tasks_dir}")
    return out
