"""The grading rules, defined once: which files are tests, protected or source; how a graded copy
is sanitised; the guards; module names; outcome rules; how observations are compared.

Used by episode grading, the environment's step, the BugsInPy grader, generation, and the
verifier exported with Harbor tasks, which ships this file beside it (with `artifacts.py`): it
imports nothing but the standard library and the artifact vocabulary.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

if __package__:
    from sdebench.tasks.artifacts import artifact_kind
else:  # shipped standalone beside an exported verifier
    from artifacts import artifact_kind  # type: ignore[no-redef]

PYTEST_CONFIGS = frozenset({"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "conftest.py"})
STARTUP_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
# Files an agent may not add: they change how the interpreter starts or which code an import loads.
HOOK_SUFFIXES = (".pth", ".so", ".pyd")
BYTECODE_SUFFIXES = (".pyc", ".pyo")
RESERVED_PREFIX = ".sdebench-"  # the grader's own files (reports, ini): never taken from a workspace
SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache"})

PASSED = "passed"
MISSING = "missing"
# Every other outcome (failed, error, skipped, xfailed, xpassed, missing, timeout) is not a pass.
FLOAT_REL, FLOAT_ABS = 1e-6, 1e-12  # pytest.approx's defaults


# --- path classes -------------------------------------------------------------------------
def is_test_path(rel: str, declared: Iterable[str] = ()) -> bool:
    """Whether `rel` is a test file: declared by the task, named test_*.py / *_test.py, or under tests/."""
    parts = rel.split("/")
    name = parts[-1]
    if rel in declared or "tests" in parts[:-1]:
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def is_protected(rel: str, declared: Iterable[str] = ()) -> bool:
    """Whether the grader replaces `rel` by its pristine copy (tests, conftest.py, pytest configs)."""
    return is_test_path(rel, declared) or rel.rsplit("/", 1)[-1] in PYTEST_CONFIGS


def is_memory(rel: str) -> bool:
    """Whether `rel` is a memory artifact (docs, notes, `.agent/` files): never source."""
    return artifact_kind(rel) is not None


def is_source(rel: str, declared: Iterable[str] = ()) -> bool:
    """Whether `rel` counts as source for the `unchanged` guard (not a test, config or memory artifact)."""
    return not is_protected(rel, declared) and not is_memory(rel)


def is_hook(name: str) -> bool:
    """Whether a file name is an interpreter start-up hook or a native module."""
    return name in STARTUP_HOOKS or name.endswith(HOOK_SUFFIXES)


def module_name(rel: str) -> str | None:
    """The importable name of a repo-relative .py path (a package `__init__` gives the package)."""
    if not rel.endswith(".py"):
        return None
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def module_names(paths: Iterable[str]) -> list[str]:
    """Importable module names of repo-relative .py paths, in order."""
    return [m for m in (module_name(p) for p in paths) if m]


def top_level_names(paths: Iterable[str]) -> set[str]:
    """The top-level import names a set of files provides (`x.py` and any dir holding .py files)."""
    out = set()
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        first = rel.split("/", 1)[0]
        name = first[:-3] if "/" not in rel else first
        if name.isidentifier():
            out.add(name)
    return out


# --- the graded copy ----------------------------------------------------------------------
@dataclass
class PreparedCopy:
    """The sanitised copy and how it differs from HEAD."""

    changed: list[str]  # source files added or modified
    deleted: list[str]  # source files removed
    added_names: list[str]  # top-level import names the submission added (checked for shadowing)
    notes: list[str] = field(default_factory=list)


def walk_files(root: Path) -> list[str]:
    """Regular files under `root` (no links), relative and sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def force_write(ws: Path, rel: str, data: bytes) -> None:
    """Write `rel` under `ws`, removing whatever file or dir stands in the way."""
    p = ws / rel
    for parent in reversed(p.relative_to(ws).parents):
        q = ws / parent
        if q.is_file() or q.is_symlink():
            q.unlink()
    if p.is_dir():
        shutil.rmtree(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def prepare_copy(ws: Path, pristine: Mapping[str, bytes], declared: Iterable[str] = ()) -> PreparedCopy:
    """Sanitise the copy `ws` in place: protected files back to HEAD, bytecode, hooks and reserved files removed."""
    declared = frozenset(declared)
    notes: list[str] = []
    for d in sorted(ws.rglob("__pycache__"), reverse=True):
        if d.is_dir():
            shutil.rmtree(d)
            notes.append(f"removed bytecode cache {d.relative_to(ws).as_posix()}")
    before = set(walk_files(ws))
    for rel in sorted(before):
        name = rel.rsplit("/", 1)[-1]
        p = ws / rel
        if name.endswith(BYTECODE_SUFFIXES):
            p.unlink()
            notes.append(f"removed bytecode {rel}")
        elif any(part.startswith(RESERVED_PREFIX) for part in rel.split("/")):
            p.unlink()
            notes.append(f"removed grader-reserved file {rel}")
        elif is_protected(rel, declared):
            if rel not in pristine:
                notes.append(f"removed added test or config file {rel}")
            elif p.read_bytes() != pristine[rel]:
                notes.append(f"discarded changes to {rel}")
            p.unlink()
        elif is_hook(name) and rel not in pristine:
            p.unlink()
            notes.append(f"removed start-up hook or native module {rel}")
    for rel, data in pristine.items():
        hook = is_hook(rel.rsplit("/", 1)[-1])
        if not (hook or is_protected(rel, declared)):
            continue
        if rel not in before:
            notes.append(f"restored deleted {rel}")
        elif hook:
            if (ws / rel).read_bytes() == data:
                continue
            notes.append(f"discarded changes to {rel}")
        force_write(ws, rel, data)
    files = set(walk_files(ws))
    src_now = {r for r in files if is_source(r, declared)}
    src_head = {r for r in pristine if is_source(r, declared)}
    changed = sorted(r for r in src_now if r not in pristine or (ws / r).read_bytes() != pristine[r])
    deleted = sorted(src_head - src_now)
    added = sorted(top_level_names(files) - top_level_names(pristine))
    return PreparedCopy(changed, deleted, added, notes)


def compile_error(data: bytes, rel: str) -> str | None:
    """Why `data` does not compile as Python (compiling executes nothing), or None."""
    try:
        compile(data, rel, "exec", dont_inherit=True)
    except SyntaxError as e:
        return f"{type(e).__name__}: {e.msg} (line {e.lineno})"
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def compile_errors(ws: Path, paths: Iterable[str]) -> dict[str, str]:
    """Host-side compile() of each .py path: path -> error line."""
    errors = {}
    for rel in paths:
        if rel.endswith(".py") and (msg := compile_error((ws / rel).read_bytes(), rel)):
            errors[rel] = msg
    return errors


# --- outcomes -----------------------------------------------------------------------------
def outcome_of(tests: Mapping[str, str], test_id: str) -> str:
    """The outcome of `test_id` in id -> outcome; an id without parameters needs every instance to pass."""
    if test_id in tests:
        return tests[test_id]
    inst = [o for k, o in tests.items() if k.startswith(test_id + "[")]
    if not inst:
        return MISSING
    return PASSED if all(o == PASSED for o in inst) else next(o for o in inst if o != PASSED)


def values_match(expected, observed) -> bool:
    """Whether an observed encoded value equals the expected one: same type tags everywhere,
    floats within pytest.approx's default tolerance, Decimals equal by value, the rest exact."""
    if not (isinstance(expected, list) and isinstance(observed, list)) or not expected or not observed:
        return False
    tag = expected[0]
    if observed[0] != tag or len(observed) != len(expected) or tag == "unplain":
        return False
    if tag == "float":
        return _floats_match(expected[1], observed[1])
    if tag == "Decimal":
        return _decimals_match(expected[1], observed[1])
    if tag in ("list", "tuple", "set", "frozenset"):
        a, b = expected[1], observed[1]
        return isinstance(b, list) and len(a) == len(b) and all(values_match(x, y) for x, y in zip(a, b, strict=True))
    if tag == "dict":
        a, b = expected[1], observed[1]
        return (isinstance(b, list) and len(a) == len(b)
                and all(isinstance(q, list) and len(q) == 2 and p[0] == q[0] and values_match(p[1], q[1])
                        for p, q in zip(a, b, strict=True)))
    return expected == observed


def _floats_match(a, b) -> bool:
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= max(FLOAT_REL * abs(x), FLOAT_ABS)


def _decimals_match(a, b) -> bool:
    try:
        x, y = Decimal(str(a)), Decimal(str(b))
    except (InvalidOperation, ValueError):
        return False
    if x.is_nan() or y.is_nan():
        return x.is_nan() and y.is_nan() and str(a) == str(b)
    return x == y


def observations_match(expected: list, observed: list | tuple | None) -> bool:
    """Whether one test's observations equal the expected list, in order."""
    if observed is None or len(observed) != len(expected):
        return False
    return all(values_match(e, o) for e, o in zip(expected, observed, strict=True))


def observed_verdict(expected: Mapping[str, list], reported: Mapping[str, tuple[str, list | None]],
                     test_id: str) -> bool:
    """Whether `test_id` passed on observations: every expected instance (the id itself or its
    parametrized instances) was reported passed with matching observations, and no other instance."""
    want = {k: v for k, v in expected.items() if k == test_id or k.startswith(test_id + "[")}
    got = {k: v for k, v in reported.items() if k == test_id or k.startswith(test_id + "[")}
    if not want or set(want) != set(got):
        return False
    return all(got[k][0] == PASSED and observations_match(want[k], got[k][1]) for k in want)


def is_plain_encoding(enc) -> bool:
    """Whether an encoded observation holds only plain data (an oracle's must)."""
    if not isinstance(enc, list) or not enc:
        return False
    tag = enc[0]
    if tag == "unplain":
        return False
    if tag in ("list", "tuple", "set", "frozenset"):
        return all(is_plain_encoding(x) for x in enc[1])
    if tag == "dict":
        return all(is_plain_encoding(k) and is_plain_encoding(v) for k, v in enc[1])
    return True
