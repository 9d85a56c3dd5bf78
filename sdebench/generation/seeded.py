"""The per-set salt a fresh task set mixes into the kit's own randomness; none by default.

The kit draws filler and lays out memory artifacts from RNGs keyed by strings (family, variant,
size), so the published set is deterministic. A fresh set (`sdebench.generation.fresh`) builds each
variant inside `salted(token)`, a context (not a global switch: it is reset on exit and is local to
the thread) whose token the kit mixes into those keys, so filler and entry order are drawn afresh
from the set's secret key. Outside it every draw is exactly the published one.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_SALT: ContextVar[str | None] = ContextVar("sdebench_fresh_salt", default=None)


def salt() -> str | None:
    """The active salt (a hex token derived from the set's key), or None outside a fresh build."""
    return _SALT.get()


@contextmanager
def salted(token: str) -> Iterator[None]:
    """Build with `token` mixed into the kit's keyed draws."""
    reset = _SALT.set(token)
    try:
        yield
    finally:
        _SALT.reset(reset)


def salted_key(key: str) -> str:
    """`key` with the active salt appended (unchanged outside a fresh build)."""
    s = salt()
    return key if s is None else f"{key}:{s}"


def entry_order(path: str, entries: list[str]) -> list[str]:
    """The entries of one artifact file in the order they are written: as added, or (salted) sorted by
    a keyed hash of each entry, so distractors keep one order in every placement and the fact entry
    falls at a drawn place among them. A first entry that is the file's title (`# ...`, an ADR written
    as one entry) stays first, so an entry appended to a document never lands above its title."""
    s = salt()
    if s is None:
        return list(entries)
    title = [e for e in entries[:1] if e.startswith("# ")]
    rest = sorted(entries[len(title):], key=lambda e: hashlib.sha256(f"{s}\0{path}\0{e}".encode()).digest())
    return title + rest


def per_set_cache(fn: Callable) -> Callable:
    """`functools.cache` keyed by the active salt too: a fresh build never reuses a published draw
    (nor a published build a fresh one) cached in the same process."""
    cached = functools.cache(lambda token, *args: fn(*args))

    @functools.wraps(fn)
    def wrapper(*args):
        return cached(salt(), *args)

    return wrapper
