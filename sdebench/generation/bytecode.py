"""Checked bytecode for a validation tree's modules, compiled once per distinct source.

A task's validation runs pytest three times (HEAD, the oracle fix, the conventional fix), each in
a fresh process that may not write bytecode: every module a test imports is compiled three times.
At scale the import smoke test of many families imports every filler module (150 at 2,000
commits), and compiling them was a third of each run. Each tree therefore gets, beside every
module that is not a test file, the `__pycache__` file Python itself would write for it, in the
*checked hash-based* form (PEP 552): before using it the interpreter hashes the source next to it
and compiles afresh if they differ, so what runs is always the tree's own source. A sandbox whose
Python has another bytecode version looks for another file name and compiles, as before. Test
files are left out: pytest compiles them through its assertion rewriting, not from these files.
"""

from __future__ import annotations

import functools
import importlib.util
import marshal
import sys
from collections.abc import Mapping

from sdebench.grading.rules import is_test_path

CHECKED_HASH = 0b11  # PEP 552 flags: hash-based, checked against the source on every import


@functools.lru_cache(maxsize=4096)
def _pyc(source: str) -> bytes | None:
    data = source.encode()
    try:
        # dont_inherit: the future imports of this module must not leak into the compiled code.
        code = compile(data, "<source>", "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError):
        return None  # left to the run, which reports it as Python would
    return (importlib.util.MAGIC_NUMBER + CHECKED_HASH.to_bytes(4, "little") + importlib.util.source_hash(data)
            + marshal.dumps(code))


def bytecode_files(tree: Mapping[str, str]) -> dict[str, bytes]:
    """Repo-relative `__pycache__` path -> checked pyc bytes for each non-test module of `tree`."""
    if sys.implementation.cache_tag is None:
        return {}
    out = {}
    for rel, source in tree.items():
        if rel.endswith(".py") and not is_test_path(rel) and rel.rsplit("/", 1)[-1] != "conftest.py":
            pyc = _pyc(source)
            if pyc is not None:
                out[importlib.util.cache_from_source(rel, optimization="")] = pyc
    return out
