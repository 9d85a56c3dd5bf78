"""The runner's lines, read with bounds: one parser for every line the host takes from a sandbox.

A line's payload is JSON written by the runner, or forged by the code under test, which shares
its stdout. So the payload is untrusted input: `parse` bounds its size, nesting depth, numbers,
types and text, and returns a checked record or None. It never raises, whatever the bytes: a
payload that would make a plain `json.loads`/`float()`/`int()` raise (nesting 100,000 deep, an
integer of 5,000 digits, invalid UTF-8, a lone surrogate) is simply not a record.

Records come out normalised: every field the host reads is present with its type, text is valid
UTF-8 without NUL or other control characters (but newline and tab), and lengths are capped.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_LINE = 4 << 20  # bytes of one payload (a test's observations are capped at 256 KiB by the runner)
MAX_DEPTH = 256  # JSON nesting (the runner's deepest: observations 40 values deep, up to 3 levels each)
MAX_NODES = 1 << 20  # JSON values in one payload
MAX_DIGITS = 18  # a JSON integer longer than this is not one the runner writes
MAX_NUMBER = 1e9  # durations (s) and exit codes are far below this
MAX_ID = 2000  # characters of a test id, module or name
MAX_TEXT = 8000  # characters of a message (the runner keeps 2,000)
MAX_LIST = 100  # entries of a tampering list
OUTCOMES = frozenset({"passed", "failed", "error", "skipped", "xfailed", "xpassed"})
PROGRESS = frozenset({"boot", "start", "gate", "import", "collect", "test", "end"})
REPORT = frozenset({"start", "test", "import", "collect", "shadow", "tamper", "crash", "end"})
_KEEP = frozenset("\n\t")


class _Bad(ValueError):
    """A payload outside the bounds."""


def clean_text(value: str, limit: int = MAX_TEXT, tail: bool = False) -> str:
    """`value` as text anyone downstream can encode and print: valid UTF-8 (a lone surrogate
    becomes '?'), no NUL or other control character but newline and tab, at most `limit`
    characters (the head, or with `tail` the end). A fixed transform: it depends on no secret."""
    if len(value) > limit:
        value = value[-limit:] if tail else value[:limit]
    text = value.encode("utf-8", "replace").decode("utf-8")
    if text.isprintable():
        return text
    return "".join(c for c in text if c in _KEEP or not (c < " " or "\x7f" <= c <= "\x9f"))


def _int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_DIGITS:
        raise _Bad("integer too long")
    return int(s)


def _float(s: str) -> float:
    if len(s) > 40:
        raise _Bad("number too long")
    x = float(s)
    if not math.isfinite(x):
        raise _Bad("not finite")
    return x


def _constant(s: str) -> Any:
    raise _Bad(f"{s} is not a number")


def _bounded(value: Any) -> None:
    """Raise _Bad when `value` nests deeper than MAX_DEPTH or holds more than MAX_NODES values."""
    stack = [(value, 1)]
    nodes = 0
    while stack:
        v, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH or nodes > MAX_NODES:
            raise _Bad("too deep or too large")
        if isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())


def _text(rec: dict, key: str, limit: int, tail: bool = False, default: str | None = "") -> str:
    v = rec.get(key, default)
    if not isinstance(v, str):
        raise _Bad(f"{key} is not text")
    return clean_text(v, limit, tail)


def _number(rec: dict, key: str) -> float:
    v = rec.get(key, 0.0)
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_NUMBER:
        raise _Bad(f"{key} is not a bounded number")
    return float(v)


def _progress(rec: dict) -> dict:
    p = rec.get("p")
    if p not in PROGRESS:
        raise _Bad("unknown progress marker")
    out: dict[str, Any] = {"p": p}
    if p == "test":
        out["id"] = _text(rec, "id", MAX_ID)
    if p == "import":
        out["m"] = _text(rec, "m", MAX_ID)
    return out


def _report(rec: dict) -> dict:
    kind = rec.get("k")
    if kind not in REPORT:
        raise _Bad("unknown record kind")
    if kind == "test":
        obs = rec.get("obs")
        if obs is not None and not isinstance(obs, list):
            raise _Bad("observations are not a list")
        outcome = rec.get("outcome")
        return {"k": kind, "id": _text(rec, "id", MAX_ID, default=None),
                # An outcome the runner never writes is not a pass.
                "outcome": outcome if outcome in OUTCOMES else "error",
                "message": _text(rec, "message", MAX_TEXT, tail=True), "duration": _number(rec, "duration"),
                "obs": obs}
    if kind == "import":
        return {"k": kind, "module": _text(rec, "module", MAX_ID, default=None),
                "error": _text(rec, "error", MAX_TEXT, tail=True)}
    if kind == "collect":
        return {"k": kind, "id": _text(rec, "id", MAX_ID), "message": _text(rec, "message", MAX_TEXT, tail=True)}
    if kind == "shadow":
        return {"k": kind, "name": _text(rec, "name", MAX_ID, default=None), "where": _text(rec, "where", MAX_ID)}
    if kind == "tamper":
        what = rec.get("what", [])
        if not isinstance(what, list) or not all(isinstance(w, str) for w in what):
            raise _Bad("tampering list is not text")
        return {"k": kind, "what": [clean_text(w, MAX_ID) for w in what[:MAX_LIST]]}
    if kind == "crash":
        return {"k": kind, "message": _text(rec, "message", MAX_TEXT, tail=True)}
    if kind == "end":
        code = rec.get("exit")
        ok = isinstance(code, int) and not isinstance(code, bool) and abs(code) <= MAX_NUMBER
        return {"k": kind, "exit": code if ok else None}
    return {"k": kind}  # start


def parse(payload: bytes) -> dict | None:
    """One line's payload as a checked record (`{"p": ...}` progress or `{"k": ...}` report), or None.

    Never raises: anything outside the bounds, of the wrong type or not valid JSON in UTF-8 is None."""
    try:
        if len(payload) > MAX_LINE:
            return None
        raw = json.loads(payload.decode("utf-8"), parse_int=_int, parse_float=_float, parse_constant=_constant)
        if not isinstance(raw, dict):
            return None
        _bounded(raw)
        if "p" in raw:
            return _progress(raw)
        if "k" in raw:
            return _report(raw)
        return None
    except Exception:  # noqa: BLE001 - RecursionError, MemoryError, ValueError...: hostile input is no record
        return None
