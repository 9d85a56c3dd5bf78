"""Pristine-copy, default-fail grading (see docs/design.md, 'Grading semantics').

grade() copies the submitted workspace, puts every test file, conftest.py and pytest config back
to its pristine HEAD content, strips bytecode and interpreter start-up hooks, adds the hidden
tests and a pair of nonce-named canary tests, and runs pytest in a fresh sandbox. Outcomes come
from the runner's JSON report only; anything absent from it did not pass.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from sdebench.grading.rewards import rewards, shaped
from sdebench.grading.testrun import TestRun, module_names, run_tests
from sdebench.sandbox.base import SandboxFactory
from sdebench.sandbox.files import DEFAULT_MAX_BYTES, copy_tree
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.artifacts import artifact_kind
from sdebench.tasks.record import DEFAULT_GRADER, Task

GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS", "HIDDEN_TO_PASS")
DEFAULT_TIMEOUT = 300.0
PYTEST_CONFIGS = frozenset(
    {"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "conftest.py"}
)
STARTUP_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
# Files an agent may not add: they change how the interpreter starts or which code an import loads.
NATIVE_OR_HOOK_SUFFIXES = (".pth", ".so", ".pyd")
BYTECODE_SUFFIXES = (".pyc", ".pyo")
GRADER_FILE_PREFIX = ".sdebench-"
# Top-level names an agent may not add: they would shadow the standard library or the test framework.
SHADOWED_NAMES = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging"}
REDACTED = "[redacted]"
MIN_REDACT_LINE = 8  # hidden-test lines shorter than this are too generic to redact


@dataclass(frozen=True)
class TestOutcome:
    """One graded test."""

    id: str
    group: str
    outcome: str  # passed | failed | error | skipped | xfailed | xpassed | missing
    message: str = ""


@dataclass
class Grade:
    """The verdict on one submitted workspace."""

    task_id: str
    resolved: bool
    tests: list[TestOutcome] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> {"passed": n, "total": m}
    pass_ratio: float = 0.0
    guards: list[str] = field(default_factory=list)  # guards hit, e.g. "unchanged", "compile:pkg/a.py"
    duration_s: float = 0.0
    feedback: str = ""
    reward: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # what the pristine copy changed or dropped

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


# --- the pristine tree --------------------------------------------------------------------
@dataclass(frozen=True)
class Pristine:
    """The HEAD tree of a task's repo: sha and path -> bytes (immutable, shared per process)."""

    head_sha: str
    files: tuple[tuple[str, bytes], ...]

    def as_dict(self) -> dict[str, bytes]:
        """A fresh path -> bytes dict."""
        return dict(self.files)


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class _BundleRef:
    """A bundle identified by its content hash alone (its path does not take part in equality)."""

    digest: str
    path: str = field(compare=False)


@lru_cache(maxsize=64)
def _pristine_cached(ref: _BundleRef) -> Pristine:
    # Keyed by the bundle's content hash: a regenerated task never reuses an old tree.
    with tempfile.TemporaryDirectory(prefix="sdebench-pristine-") as tmp:
        dest = repo_mod.unbundle(Path(ref.path), Path(tmp) / "repo")
        files = tuple((rel, (dest / rel).read_bytes()) for rel in repo_mod.tracked_files(dest))
        return Pristine(repo_mod.head_sha(dest), files)


def pristine_tree(task: Task) -> Pristine:
    """The HEAD tree of `task` (cached per process by bundle content)."""
    return _pristine_cached(_BundleRef(_file_digest(task.bundle), str(task.bundle.resolve())))


# --- path classes -------------------------------------------------------------------------
def is_test_path(rel: str, test_files: frozenset[str] = frozenset()) -> bool:
    """Whether `rel` is a test file: declared by the task, named test_*.py / *_test.py, or under tests/."""
    parts = rel.split("/")
    name = parts[-1]
    if rel in test_files or "tests" in parts[:-1]:
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def is_protected(rel: str, test_files: frozenset[str] = frozenset()) -> bool:
    """Whether the grader replaces `rel` by its pristine copy (tests, conftest.py, pytest configs)."""
    return is_test_path(rel, test_files) or rel.rsplit("/", 1)[-1] in PYTEST_CONFIGS


def is_source(rel: str, test_files: frozenset[str] = frozenset()) -> bool:
    """Whether `rel` counts as source for the `unchanged` guard (not a test, config or memory artifact)."""
    return not is_protected(rel, test_files) and artifact_kind(rel) is None


# --- the graded copy ----------------------------------------------------------------------
@dataclass
class Prepared:
    """The sanitised copy and what it differs in from HEAD."""

    changed: list[str]  # source files added or modified
    deleted: list[str]  # source files removed
    notes: list[str]


def _walk_files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and not p.is_symlink()
    )


def _force_write(ws: Path, rel: str, data: bytes) -> None:
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


def _top_module(rel: str) -> str:
    first = rel.split("/", 1)[0]
    return first[:-3] if first.endswith(".py") else first


def _shadows(rel: str) -> bool:
    """Whether `rel` is Python source of a top-level module named like a stdlib or test-framework module."""
    return rel.endswith(".py") and _top_module(rel) in SHADOWED_NAMES


def _is_hook(name: str) -> bool:
    return name in STARTUP_HOOKS or name.endswith(NATIVE_OR_HOOK_SUFFIXES)


def prepare_copy(ws: Path, pristine: dict[str, bytes], test_files: frozenset[str]) -> Prepared:
    """Sanitise the copy `ws` in place: protected files back to HEAD, bytecode and hooks removed."""
    notes: list[str] = []
    for d in sorted(ws.rglob("__pycache__"), reverse=True):
        if d.is_dir():
            shutil.rmtree(d)
            notes.append(f"removed bytecode cache {d.relative_to(ws).as_posix()}")
    before = set(_walk_files(ws))
    for rel in sorted(before):
        name = rel.rsplit("/", 1)[-1]
        p = ws / rel
        if name.endswith(BYTECODE_SUFFIXES):
            p.unlink()
            notes.append(f"removed bytecode {rel}")
        elif any(part.startswith(GRADER_FILE_PREFIX) for part in rel.split("/")):
            p.unlink()
            notes.append(f"removed grader-reserved file {rel}")
        elif is_protected(rel, test_files):
            if rel not in pristine:
                notes.append(f"removed added test or config file {rel}")
            elif p.read_bytes() != pristine[rel]:
                notes.append(f"discarded changes to {rel}")
            p.unlink()
        elif _is_hook(name) and rel not in pristine:
            p.unlink()
            notes.append(f"removed start-up hook or native module {rel}")
        elif _shadows(rel) and rel not in pristine:
            p.unlink()
            notes.append(f"removed {rel}: it would shadow the module {_top_module(rel)}")
    for rel, data in pristine.items():
        hook = _is_hook(rel.rsplit("/", 1)[-1])
        if not (hook or is_protected(rel, test_files)):
            continue
        if rel not in before:
            notes.append(f"restored deleted {rel}")
        elif hook:
            if (ws / rel).read_bytes() == data:
                continue
            notes.append(f"discarded changes to {rel}")
        _force_write(ws, rel, data)
    files = set(_walk_files(ws))
    src_now = {r for r in files if is_source(r, test_files)}
    src_head = {r for r in pristine if is_source(r, test_files)}
    changed = sorted(r for r in src_now if r not in pristine or (ws / r).read_bytes() != pristine[r])
    deleted = sorted(src_head - src_now)
    return Prepared(changed, deleted, notes)


def compile_errors(ws: Path, paths: list[str]) -> dict[str, str]:
    """Host-side compile() of each .py path (compiling executes nothing): path -> error line."""
    errors = {}
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        try:
            compile((ws / rel).read_bytes(), rel, "exec", dont_inherit=True)
        except SyntaxError as e:
            errors[rel] = f"{type(e).__name__}: {e.msg} (line {e.lineno})"
        except (ValueError, RecursionError, MemoryError, OverflowError) as e:
            errors[rel] = f"{type(e).__name__}: {e}"
    return errors


@dataclass(frozen=True)
class Canary:
    """Two nonce-named tests: one must pass, one must fail with a nonce in its message."""

    rel: str
    pass_id: str
    fail_id: str
    token: str

    def source(self) -> str:
        """The canary test file."""
        a, b = secrets.randbelow(10**6), secrets.randbelow(10**6) + 10**6
        pass_fn, fail_fn = self.pass_id.split("::")[1], self.fail_id.split("::")[1]
        return (
            f"def {pass_fn}():\n    assert {a} + 1 == {a + 1}\n\n\n"
            f"def {fail_fn}():\n    assert {a} == {b}, {self.token!r}\n"
        )


def make_canary(task: Task) -> Canary:
    """A canary beside the task's first FAIL_TO_PASS test file, so it shares its conftest chain."""
    first = task.tests.fail_to_pass[0].split("::")[0] if task.tests.fail_to_pass else "test_x.py"
    parent = first.rsplit("/", 1)[0] if "/" in first else ""
    stem = f"test_{secrets.token_hex(6)}"
    rel = f"{parent}/{stem}.py" if parent else f"{stem}.py"
    return Canary(
        rel,
        f"{rel}::test_{secrets.token_hex(5)}",
        f"{rel}::test_{secrets.token_hex(5)}",
        secrets.token_hex(12),
    )


def canary_tampered(run: TestRun, canary: Canary) -> bool:
    """Whether the report contradicts the canaries (only judged when pytest finished)."""
    ok = run.outcome(canary.pass_id)
    bad = run.outcome(canary.fail_id)
    return not ok.passed or bad.outcome != "failed" or canary.token not in bad.message


# --- feedback -----------------------------------------------------------------------------
def redact(text: str, hidden_sources: list[str], tokens: tuple[str, ...]) -> str:
    """Remove hidden-test lines and fact tokens from text shown to the agent."""
    lines = {
        ln.strip() for src in hidden_sources for ln in src.splitlines() if len(ln.strip()) >= MIN_REDACT_LINE
    }
    for ln in sorted(lines, key=len, reverse=True):
        text = text.replace(ln, REDACTED)
    for tok in sorted((t for t in tokens if len(t.strip()) >= 2), key=len, reverse=True):
        text = re.sub(re.escape(tok), REDACTED, text, flags=re.IGNORECASE)
    return text


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else "[...]\n" + text[-n:]


def feedback_text(
    tests: list[TestOutcome],
    guard_details: dict[str, str],
    error: str | None,
    notes: list[str],
    per_test_chars: int,
    max_chars: int,
) -> str:
    """The text fed back to the agent: failing visible tests with output, hidden counts, guards."""
    out: list[str] = []
    visible = [t for t in tests if t.group != "HIDDEN_TO_PASS"]
    hidden = [t for t in tests if t.group == "HIDDEN_TO_PASS"]
    if not guard_details and error is None and all(t.outcome == "passed" for t in tests):
        return f"Resolved: all {len(tests)} graded tests pass."
    out.append("Not resolved.")
    for reason in guard_details.values():
        out.append(f"- {reason}")
    if error:
        out.append(f"- The test run failed: {error}")
    ran = "unchanged" not in guard_details and not any(g.startswith("compile:") for g in guard_details)
    failing = [t for t in visible if t.outcome != "passed"]
    if failing and ran:
        out.append(f"\nFailing visible tests ({len(failing)} of {len(visible)}):")
        for t in failing:
            out.append(f"- {t.id}: {t.outcome}")
            if t.message:
                out.append("    " + _clip(t.message, per_test_chars).replace("\n", "\n    "))
    if hidden and ran:
        bad = sum(t.outcome != "passed" for t in hidden)
        out.append(
            f"\nHidden tests: {bad} of {len(hidden)} failed."
            if bad
            else f"\nHidden tests: all {len(hidden)} pass."
        )
    if notes:
        out.append("\nGrader notes (your workspace was normalised before testing):")
        out += [f"- {n}" for n in notes[:20]]
        if len(notes) > 20:
            out.append(f"- ... and {len(notes) - 20} more")
    text = "\n".join(out)
    return text if len(text) <= max_chars else text[: max_chars - 20] + "\n[... truncated ...]"


# --- grading ------------------------------------------------------------------------------
def _counts(tests: list[TestOutcome]) -> dict[str, dict[str, int]]:
    counts = {g: {"passed": 0, "total": 0} for g in GROUPS}
    for t in tests:
        counts[t.group]["total"] += 1
        counts[t.group]["passed"] += t.outcome == "passed"
    return counts


def _finish(
    task: Task,
    start: float,
    tests: list[TestOutcome],
    guards: dict[str, str],
    error: str | None,
    notes: list[str],
    opts: dict[str, Any],
) -> Grade:
    counts = _counts(tests)
    total = sum(c["total"] for c in counts.values())
    passed = sum(c["passed"] for c in counts.values())
    ratio = passed / total if total else 0.0
    resolved = not guards and error is None and total > 0 and passed == total
    if guards:
        reward = rewards(False, 0.0, None)
    else:
        orig_failing = counts["FAIL_TO_PASS"]["total"] + counts["HIDDEN_TO_PASS"]["total"]
        newly = counts["FAIL_TO_PASS"]["passed"] + counts["HIDDEN_TO_PASS"]["passed"]
        regressions = counts["PASS_TO_PASS"]["total"] - counts["PASS_TO_PASS"]["passed"]
        reward = rewards(
            resolved, ratio, shaped(True, newly, orig_failing, regressions, resolved, opts["step_cost"])
        )
    try:
        hidden_sources = list(task.hidden_files().values())
    except OSError:
        hidden_sources = []
    fb = feedback_text(tests, guards, error, notes, opts["per_test_chars"], opts["feedback_chars"])
    fb = redact(fb, hidden_sources, task.fact_tokens)
    return Grade(
        task.id,
        resolved,
        tests,
        counts,
        ratio,
        list(guards),
        time.monotonic() - start,
        fb,
        reward,
        error,
        notes,
    )


def _not_run(task: Task, why: str) -> list[TestOutcome]:
    return [
        TestOutcome(i, g, "missing", f"not run: {why}") for g, ids in task.tests.groups().items() for i in ids
    ]


def grade(task: Task, workspace: Path, sandbox: SandboxFactory, **options: Any) -> Grade:
    """Grade the host dir `workspace` for `task` in a fresh sandbox from `sandbox`; never raises.

    Options: timeout (s, whole pytest run), per_test_chars, feedback_chars, step_cost,
    max_workspace_mb, keep_dir (leave the graded copy on disk for inspection).
    A task whose `grader` field names another grader (e.g. "bugsinpy", the BugsInPy-v2 verifier
    rules) is graded by that one, looked up in sdebench.components.
    """
    opts = {
        "timeout": DEFAULT_TIMEOUT,
        "per_test_chars": 1500,
        "feedback_chars": 6000,
        "step_cost": 0.1,
        "max_workspace_mb": DEFAULT_MAX_BYTES // (1024 * 1024),
        "keep_dir": False,
    }
    if task.grader != DEFAULT_GRADER:
        from sdebench.components import ComponentError, grader_for

        try:
            other = grader_for(task)
        except ComponentError as e:
            return _finish(task, time.monotonic(), _not_run(task, "no grader"), {}, str(e), [], opts)
        return other(task, workspace, sandbox, **options)
    unknown = sorted(set(options) - set(opts))
    start = time.monotonic()
    if unknown:
        return _finish(
            task,
            start,
            _not_run(task, "bad options"),
            {},
            f"unknown grade option(s): {', '.join(unknown)}",
            [],
            opts,
        )
    opts.update(options)
    tmp = Path(tempfile.mkdtemp(prefix="sdebench-grade-"))
    try:
        return _grade(task, Path(workspace), sandbox, tmp, opts, start)
    except Exception as e:  # noqa: BLE001 - the grader never raises; the reason is the grade
        return _finish(task, start, _not_run(task, "grader error"), {}, f"{type(e).__name__}: {e}", [], opts)
    finally:
        if not opts["keep_dir"]:
            shutil.rmtree(tmp, ignore_errors=True)


def _grade(
    task: Task, workspace: Path, factory: SandboxFactory, tmp: Path, opts: dict[str, Any], start: float
) -> Grade:
    if not workspace.is_dir():
        return _finish(
            task,
            start,
            _not_run(task, "no workspace"),
            {},
            f"workspace {workspace} is not a directory",
            [],
            opts,
        )
    ws = tmp / "ws"
    copied = copy_tree(workspace, ws, skip_git=True, max_bytes=int(opts["max_workspace_mb"]) * 1024 * 1024)
    pristine = pristine_tree(task)
    if pristine.head_sha != task.head_sha:
        return _finish(
            task,
            start,
            _not_run(task, "bad task"),
            {},
            f"task bundle HEAD {pristine.head_sha[:12]} "
            f"does not match task.toml head_sha {task.head_sha[:12]}",
            [],
            opts,
        )
    test_files = frozenset(task.test_files)
    prep = prepare_copy(ws, pristine.as_dict(), test_files)
    notes = copied.notes + prep.notes
    guards: dict[str, str] = {}
    if not prep.changed and not prep.deleted:
        guards["unchanged"] = (
            "No source change: the code is identical to the original, so nothing can be fixed."
        )
        return _finish(task, start, _not_run(task, "unchanged source"), guards, None, notes, opts)
    for rel, msg in compile_errors(ws, prep.changed).items():
        guards[f"compile:{rel}"] = f"{rel} does not compile: {msg}"
    if guards:
        return _finish(task, start, _not_run(task, "source does not compile"), guards, None, notes, opts)

    for rel, content in task.hidden_files().items():
        _force_write(ws, rel, content.encode())
    canary = make_canary(task)
    _force_write(ws, canary.rel, canary.source().encode())

    ids = [i for g in task.tests.groups().values() for i in g]
    paths = sorted({i.split("::")[0] for i in ids} | {canary.rel})
    with factory.open(ws, read_only=True) as box:
        run = run_tests(box, paths, module_names(prep.changed), timeout=float(opts["timeout"]), cleanup=False)

    error = run.error
    for mod, msg in sorted(run.import_errors.items()):
        guards[f"import:{mod}"] = f"module {mod} fails to import: {msg.splitlines()[-1] if msg else ''}"
    if error is None and canary_tampered(run, canary):
        guards["tampering"] = (
            "The test run was tampered with: the grader's control tests gave wrong results, "
            "so no outcome of this run is trusted."
        )
    tests = [
        TestOutcome(i, g, (r := run.outcome(i)).outcome, r.message)
        for g, group in task.tests.groups().items()
        for i in group
    ]
    return _finish(task, start, tests, guards, error, notes, opts)
