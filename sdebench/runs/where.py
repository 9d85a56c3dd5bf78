"""Filters over episode records: `--where KEY=VALUE` and `--where KEY!=VALUE` of `sdebench results`
and `sdebench episode list`.

KEY is any name the summary engine knows (sdebench.runs.summary.names: a record field by its leaf
name, `agent`, or by `section.leaf`, `identity.agent`, `outcome.resolved`, `delivery.inject_tokens`,
`retrieval.retrieved`; or a derived key: `kind`, `task_set`, `tier`, `competency`). VALUE is
compared as text (`true`/`false` for booleans, `none` for a missing value); a comma list matches any
of its values (`agent=oracle,noop`). Several filters must all hold.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from sdebench.errors import RunError
from sdebench.runs import summary
from sdebench.runs.record import EpisodeRecord

LITERALS = ("true", "false", "none")


class FilterError(RunError, ValueError):
    """A filter that cannot be applied (the message is one line and says what to write instead)."""


@dataclass(frozen=True)
class Condition:
    """One `key=value[,value...]` (or `key!=...`) filter."""

    key: str
    values: tuple[str, ...]
    negated: bool = False

    def holds(self, rec: EpisodeRecord) -> bool:
        """Whether `rec` passes this condition."""
        return (summary.text(summary.value(rec, self.key)) in self.values) != self.negated

    def __str__(self) -> str:
        return f"{self.key}{'!=' if self.negated else '='}{','.join(self.values)}"


def closest(name: str) -> str:
    """The known key nearest to `name` (for the error message)."""
    known = summary.names()
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
    return near[0] if near else known[0]


def check_key(key: str, flag: str = "--where") -> str:
    """`key` if the engine knows it; else FilterError naming the closest known key."""
    if key not in set(summary.names()):
        raise FilterError(f"{flag}: unknown field {key!r} (did you mean {closest(key)!r}?)")
    return key


def parse(items: Iterable[str]) -> list[Condition]:
    """The conditions of `--where` items; FilterError naming the closest field for an unknown one."""
    out = []
    for item in items:
        key, neg, rest = item.partition("!=")
        if not neg:
            key, eq, rest = item.partition("=")
            if not eq:
                raise FilterError(f"--where {item!r}: expected KEY=VALUE or KEY!=VALUE")
        key = check_key(key.strip())
        values = (v.strip() for v in rest.split(","))
        # booleans and a missing value are written any case: True, false, None
        out.append(Condition(key, tuple(v.lower() if v.lower() in LITERALS else v for v in values), bool(neg)))
    return out


def select(records: Iterable[EpisodeRecord], conditions: list[Condition]) -> list[EpisodeRecord]:
    """The records that pass every condition, in their order."""
    return [r for r in records if all(c.holds(r) for c in conditions)]


def describe(conditions: list[Condition]) -> str:
    """The conditions as one readable phrase (`agent=oracle and delivery!=full`), or `no filter`."""
    return " and ".join(str(c) for c in conditions) or "no filter"


def nothing(conditions: list[Condition], total: int, dirs: Iterable[str]) -> str:
    """The one line saying nothing matched: the filter, readably, and what there was."""
    where = ", ".join(str(d) for d in dirs)
    if not total:
        return f"no episode records under {where}"
    return f"no episodes match {describe(conditions)} (of {total} under {where})"
