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

Only the modules the tests can reach are compiled (most families' tests import a few modules, and
compiling the filler for them would cost more than it saves): those their imports name, followed
from module to module, and every module of a package a reached file walks with `pkgutil` (the
import smoke test). A module missed here is compiled by the run, as before.
"""

from __future__ import annotations

import functools
import importlib.util
import marshal
import re
import sys
from collections.abc import Iterable, Mapping

from sdebench.grading.rules import is_test_path, module_name

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


_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_WALKS = ("walk_packages", "iter_modules")


def _is_test(rel: str) -> bool:
    return is_test_path(rel) or rel.rsplit("/", 1)[-1] == "conftest.py"


def _named(source: str, package: str) -> set[str]:
    """The module names the imports of `source` may load (each parent package included)."""
    names = set()
    for m in _IMPORT.finditer(source):
        names |= {part.split()[0] for part in m.group(1).split(",") if part.split()}
    for m in _FROM.finditer(source):
        dots, base, what = m.groups()
        if dots:
            up = package.split(".")[: len(package.split(".")) - (len(dots) - 1)] if package else []
            base = ".".join([*up, base] if base else up)
        names.add(base)
        names |= {f"{base}.{part.split()[0]}" for part in what.strip("()").split(",") if part.split()}
    out = set()
    for name in names:
        parts = [p for p in name.split(".") if p]
        out |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return out


def reachable_modules(tree: Mapping[str, str], modules: Iterable[str] = ()) -> set[str]:
    """The non-test module paths of `tree` its test files and `modules` can import (see the module doc)."""
    by_name = {n: rel for rel in tree if (n := module_name(rel)) is not None}
    todo = [rel for rel in tree if rel.endswith(".py") and _is_test(rel)]
    todo += [by_name[m] for m in modules if m in by_name]
    seen: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        name = module_name(rel) or ""
        package = name if rel.endswith("__init__.py") else name.rpartition(".")[0]
        named = _named(tree[rel], package)
        todo += [by_name[n] for n in named if n in by_name]
        if any(w in tree[rel] for w in _WALKS):
            tops = {n.split(".")[0] for n in named if n in by_name}
            todo += [r for n, r in by_name.items() if n.split(".")[0] in tops]
    return {rel for rel in seen if not _is_test(rel)}


def bytecode_files(tree: Mapping[str, str], modules: Iterable[str] = ()) -> dict[str, bytes]:
    """Repo-relative `__pycache__` path -> checked pyc bytes for each module of `tree` its tests
    (and the runner's imports of `modules`) can reach."""
    if sys.implementation.cache_tag is None:
        return {}
    out = {}
    for rel in sorted(reachable_modules(tree, modules)):
        pyc = _pyc(tree[rel])
        if pyc is not None:
            out[importlib.util.cache_from_source(rel, optimization="")] = pyc
    return out
