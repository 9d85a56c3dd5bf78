"""BugsInPy-v2 parquet <-> sdebench task dirs.

The parquet has one row per task: `path` (the task name, e.g. `bugsinpy-0007`) and `task_binary`
(a gzipped tar of the task dir: instruction.md, metadata.json, task.toml, environment/Dockerfile,
environment/solution.py, tests/test.sh, tests/test_solution.py, tests/test_state.py,
tests/config.json, and where the row has one, a fixed `solution/solution.py`). An imported task
is a one-commit repo holding `solution.py`, graded by `grader = "bugsinpy"` (bugsinpy_verifier.py).

The test file never meets submitted code as written: it is rewritten here into an observation
test (sdebench.interop.bugsinpy_observe: the hidden test `tests/test_solution.py` evaluates only
the operands that depend on the code), and the assertions go to `expected.json` in the task dir,
judged on the host. Where the row has a fixed solution, the observation test is also run against
it in a sandbox and its observations are recorded beside the assertions (a test that fails on it
is left out); otherwise the assertions alone decide. A test file that does not parse makes the
task a fallback task (the basic check decides). The dataset has no gold patch, so the patches are
empty. Every file of the original dir is kept verbatim under `bugsinpy/` so export is exact.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from sdebench.errors import InteropError
from sdebench.interop import bugsinpy_observe
from sdebench.interop.bugsinpy_checks import FORMAT, judge, row_of
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.commits import Commit
from sdebench.tasks.record import (
    BUNDLE,
    CONVENTIONAL_PATCH,
    EXPECTED,
    HIDDEN_DIR,
    ORACLE_PATCH,
    Task,
    Tests,
    save_meta,
)

FAMILY = "bugsinpy"
GRADER = "bugsinpy"
TAG = "imported:bugsinpy"
SOLUTION = "solution.py"
HIDDEN_TEST = "tests/test_solution.py"  # repo-relative path of the hidden test
ORIGINALS = "bugsinpy"  # task-dir subdir holding the original files verbatim
# Paths inside the dataset's task dir.
INSTRUCTION = "instruction.md"
METADATA = "metadata.json"
SRC_SOLUTION = "environment/solution.py"
SRC_TEST = "tests/test_solution.py"
FIXED_SOLUTION = "solution/solution.py"  # a row's fixed solution, where it has one
REIMPORT = "python -m sdebench.interop bugsinpy-import PARQUET --out TASKS_DIR"
ORACLE_TIMEOUT = 300.0
REQUIRED = (INSTRUCTION, SRC_SOLUTION, SRC_TEST)
COLUMNS = ("path", "task_binary")
MAX_MEMBER_BYTES = 20 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class MalformedRow(InteropError, ValueError):
    """A parquet row that cannot become a task (the reason is the message)."""


class FormatError(InteropError, ValueError):
    """A file that is not a BugsInPy-v2 parquet at all."""


@dataclass(frozen=True)
class Skipped:
    """A row or task left out, and why."""

    where: str  # "row 3 (bugsinpy-0003)" or a task id
    reason: str


@dataclass
class Report:
    """What an import or export did (`notes`: what an imported task leaves out or judges weakly)."""

    done: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)


# --- the tar ----------------------------------------------------------------------------------
def _clean_member_path(name: str) -> str | None:
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts) or name.startswith("/"):
        return None
    return "/".join(parts)


def read_tar(blob: bytes) -> dict[str, bytes]:
    """The regular files of a gzipped tar as relative path -> bytes (one shared top dir stripped)."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tf:
            for m in tf.getmembers():
                if not m.isfile():
                    continue  # dirs, links and devices carry nothing a task needs
                rel = _clean_member_path(m.name)
                if rel is None:
                    raise MalformedRow(f"unsafe path in tar: {m.name!r}")
                if m.size > MAX_MEMBER_BYTES:
                    raise MalformedRow(f"tar member {rel} is too large ({m.size} bytes)")
                f = tf.extractfile(m)
                files[rel] = f.read() if f else b""
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise MalformedRow(f"task_binary is not a gzipped tar: {e}") from None
    if not files:
        raise MalformedRow("task_binary holds no files")
    if INSTRUCTION not in files:
        tops = {rel.split("/", 1)[0] for rel in files}
        if len(tops) == 1 and all("/" in rel for rel in files):
            top = tops.pop()
            files = {rel[len(top) + 1 :]: data for rel, data in files.items()}
    return files


def pack_tar(files: dict[str, bytes]) -> bytes:
    """A deterministic gzipped tar of `files` (sorted, zero mtimes, root owner)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for rel in sorted(files):
            data = files[rel]
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o755 if rel.endswith(".sh") else 0o644
            info.mtime = 0
            tf.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with open_gzip(out) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def open_gzip(fileobj: io.BytesIO):
    """A gzip writer with a fixed header (no name, zero mtime), so equal input gives equal bytes."""
    import gzip

    return gzip.GzipFile(filename="", mode="wb", fileobj=fileobj, mtime=0)


# --- import -----------------------------------------------------------------------------------
def _text(files: dict[str, bytes], rel: str) -> str:
    try:
        return files[rel].decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedRow(f"{rel} is not UTF-8 ({e.reason} at byte {e.start})") from None


def check_files(files: dict[str, bytes]) -> tuple[str, str, str]:
    """The instruction, solution and test texts of a task's files; raises MalformedRow."""
    missing = [r for r in REQUIRED if r not in files]
    if missing:
        raise MalformedRow(f"missing {', '.join(missing)}")
    instruction = _text(files, INSTRUCTION).strip()
    if not instruction:
        raise MalformedRow(f"{INSTRUCTION} is empty")
    return instruction, _text(files, SRC_SOLUTION), _text(files, SRC_TEST)


def _metadata(files: dict[str, bytes]) -> dict:
    try:
        data = json.loads(files.get(METADATA, b"{}").decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _variant(name: str, row: int) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else row


def task_record(name: str, row: int, instruction: str, meta: dict, head_sha: str) -> Task:
    """The sdebench record of one imported task."""
    project = str(meta.get("project") or "").strip()
    tags = [TAG] + ([f"project:{project}"] if project else [])
    bits = [f"BugsInPy-v2 task {name}"]
    if project:
        bits.append(f"project {project}")
    for key in ("buggy_commit", "fixed_commit"):
        if meta.get(key):
            bits.append(f"{key.replace('_', ' ')} {str(meta[key])[:12]}")
    return Task(
        id=name,
        family=FAMILY,
        variant=_variant(name, row),
        source="none",
        bottleneck="knowledge-missing",
        statement=instruction,
        fact="",
        fact_tokens=(),
        conventional_guess="",
        modules=1,
        commits=1,
        head_sha=head_sha,
        tests=Tests((), (), ()),
        memory_artifacts=(),
        test_files=(),
        tags=tuple(tags),
        description=", ".join(bits),
        grader=GRADER,
    )


def host_table(name: str, test: str, fixed: str | None, factory: SandboxFactory | None) -> tuple[dict, str | None]:
    """The host table (expected.json) of one task and its rewritten test (None: a fallback task); raises MalformedRow."""
    if len(test) > bugsinpy_observe.MAX_SOURCE:  # not a broken file: no fallback for it
        raise MalformedRow(f"{SRC_TEST} is too large to rewrite ({len(test)} characters)")
    try:
        rw = bugsinpy_observe.rewrite(test, HIDDEN_TEST, _evaluator(name, factory))
    except bugsinpy_observe.RewriteError as e:
        return {"format": FORMAT, "fallback": str(e)}, None
    try:
        compile(rw.source, HIDDEN_TEST, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:  # a construct the rewrite mishandles: refuse rather than misgrade
        raise MalformedRow(f"the observation version of {SRC_TEST} does not compile: {e}") from None
    table = rw.table()
    if fixed is not None:
        table = _with_oracle(name, table, rw.source, fixed, factory)
    if not table["tests"]:
        why = "; ".join(f"{k.split('::', 1)[1]}: {v}" for k, v in list(table["excluded"].items())[:3])
        raise MalformedRow(f"no test of {SRC_TEST} can be judged on the host ({why or 'it defines none'})")
    return table, rw.source


def _evaluator(name: str, factory: SandboxFactory | None):
    """Computes expressions of a test's own imports once, in a sandbox holding no solution.py (None: no sandbox)."""
    from sdebench.grading.rules import is_plain_encoding
    from sdebench.grading.testrun import run_tests

    if factory is None:
        return None

    def evaluate(imports: str, expressions: list[str]) -> list[list | None]:
        body = "".join(f"\n\ndef test_value_{k}(observe):\n    observe({e})\n" for k, e in enumerate(expressions))
        with tempfile.TemporaryDirectory(prefix=f"values-{name}-") as tmp:
            root = Path(tmp) / "repo"
            (root / "tests").mkdir(parents=True)
            (root / "tests" / "test_values.py").write_text(imports + "\n" + body)
            with factory.open(root, read_only=True) as box:
                run = run_tests(box, ["tests/test_values.py"], [], timeout=ORACLE_TIMEOUT, mode="observe")
        out: list[list | None] = []
        for k in range(len(expressions)):
            r = run.tests.get(f"tests/test_values.py::test_value_{k}")
            ok = r is not None and r.passed and r.observed is not None and len(r.observed) == 1
            out.append(list(r.observed[0]) if ok and is_plain_encoding(r.observed[0]) else None)
        return out

    return evaluate


def _with_oracle(name: str, table: dict, source: str, fixed: str, factory: SandboxFactory | None) -> dict:
    """`table` with the fixed solution's observations of every test; a test it fails is left out."""
    from sdebench.grading.testrun import run_tests

    if factory is None:
        raise MalformedRow(f"the row has {FIXED_SOLUTION}: a sandbox is needed to record its observations")
    with tempfile.TemporaryDirectory(prefix=f"oracle-{name}-") as tmp:
        root = Path(tmp) / "repo"
        (root / "tests").mkdir(parents=True)
        (root / SOLUTION).write_text(fixed)
        (root / HIDDEN_TEST).write_text(source)
        with factory.open(root, read_only=True) as box:
            run = run_tests(box, [HIDDEN_TEST], ["solution"], timeout=ORACLE_TIMEOUT, mode="observe")
    if run.error:
        raise MalformedRow(f"the fixed solution could not be run: {run.error}")
    if run.import_errors:
        raise MalformedRow(f"the fixed solution fails to import: {next(iter(run.import_errors.values()))[-200:]}")
    oracle: dict[str, list] = {}
    tests = dict(table["tests"])
    for test_id, entry in table["tests"].items():
        found = run.instances(test_id)
        ok = bool(found) and all(
            judge(table["checks"], entry["required"], r.outcome, r.observed, row=row_of(entry, key),
                  loops=table.get("loops"))
            for key, r in found.items())
        if not ok:
            del tests[test_id]
            table["excluded"][test_id] = "fails on the dataset's fixed solution"
            continue
        oracle.update({key: [list(o) for o in r.observed] for key, r in found.items()})
    return {**table, "tests": tests, "oracle": oracle}


def write_task(name: str, row: int, files: dict[str, bytes], out_dir: Path,
               factory: SandboxFactory | None = None) -> tuple[Task, dict]:
    """Write one imported task dir `out_dir/<name>` (replacing an old one) and return it with its host
    table; raises MalformedRow. `factory` runs a row's fixed solution (needed only when it has one)."""
    if not _NAME.match(name):
        raise MalformedRow(f"path {name!r} is not a usable task name")
    instruction, solution, test = check_files(files)
    fixed = _text(files, FIXED_SOLUTION) if FIXED_SOLUTION in files else None
    table, observed = host_table(name, test, fixed, factory)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
    try:
        head = repo_mod.build(tmp / "repo", [Commit(f"Import {name}", {SOLUTION: solution})])
        task_dir = tmp / "task"
        task_dir.mkdir()
        repo_mod.bundle(tmp / "repo", task_dir / BUNDLE)
        (task_dir / HIDDEN_DIR / "tests").mkdir(parents=True)
        if observed is not None:
            (task_dir / HIDDEN_DIR / HIDDEN_TEST).write_text(observed)
        (task_dir / EXPECTED).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        (task_dir / ORACLE_PATCH).write_text("")
        (task_dir / CONVENTIONAL_PATCH).write_text("")
        for rel, data in files.items():
            if rel == SRC_SOLUTION:
                continue  # kept as the repo
            p = task_dir / ORIGINALS / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        task = task_record(name, row, instruction, _metadata(files), head)
        save_meta(task, task_dir)
        dest = out_dir / name
        if dest.exists():
            shutil.rmtree(dest)
        task_dir.rename(dest)
        return replace(task, path=dest), table
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table_notes(table: dict) -> list[str]:
    """What an imported task's host table leaves out or judges in the sandbox, one line each."""
    if "fallback" in table:
        return [f"fallback (the basic check decides): {table['fallback']}"]
    notes = [f"not graded: {k.split('::', 1)[1]}: {v}" for k, v in sorted(table.get("excluded", {}).items())]
    return notes + [f"judged in the sandbox: {w}" for w in table.get("in_sandbox", [])]


def read_rows(parquet: Path):
    """Yield (row number, path, task_binary) of a BugsInPy-v2 parquet, a batch at a time."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(parquet)
    except (OSError, ValueError) as e:
        raise FormatError(f"{parquet}: not a readable parquet file: {e}") from None
    names = pf.schema_arrow.names
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise FormatError(f"{parquet}: missing column(s) {', '.join(missing)} (have {', '.join(names)})")
    row = 0
    for batch in pf.iter_batches(batch_size=64, columns=list(COLUMNS)):
        for path, blob in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
            yield row, path, blob
            row += 1


def import_parquet(parquet: Path, out_dir: Path, factory: SandboxFactory | None = None) -> Report:
    """Import every well-formed row into `out_dir`; malformed rows are reported and skipped.
    `factory` runs the fixed solutions of rows that carry one."""
    report = Report()
    seen: set[str] = set()
    for row, path, blob in read_rows(Path(parquet)):
        where = f"row {row}" + (f" ({path})" if isinstance(path, str) else "")
        try:
            if not isinstance(path, str) or not path:
                raise MalformedRow("path is empty or not a string")
            if path in seen:
                raise MalformedRow("duplicate path (an earlier row has the same name)")
            if not isinstance(blob, bytes | bytearray):
                raise MalformedRow(f"task_binary is {type(blob).__name__}, not bytes")
            _, table = write_task(path, row, read_tar(bytes(blob)), Path(out_dir), factory)
        except MalformedRow as e:
            report.skipped.append(Skipped(where, str(e)))
            continue
        except (OSError, repo_mod.RepoError) as e:  # one bad row never aborts the import
            report.skipped.append(Skipped(where, f"{type(e).__name__}: {e}"))
            continue
        seen.add(path)
        report.done.append(path)
        report.notes += [Skipped(path, note) for note in table_notes(table)]
    return report


# --- export -----------------------------------------------------------------------------------
DOCKERFILE = """\
FROM python:3.10-slim
RUN pip install --no-cache-dir pytest
WORKDIR /app
COPY solution.py /app/solution.py
COPY solution.py /app/.buggy_solution.py
"""

TEST_SH = r"""#!/bin/bash
# Default-fail verifier: 1 only for a changed solution that compiles, imports and passes the suite.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
echo 0 > /logs/verifier/pass_ratio.txt
export PYTHONPATH=/app
cd /app || exit 0
[ -f solution.py ] || { echo "no /app/solution.py"; exit 0; }
if cmp -s solution.py .buggy_solution.py; then echo "solution.py is unchanged"; exit 0; fi
python3 -c "compile(open('solution.py','rb').read(), 'solution.py', 'exec')" || exit 0
python3 -c "import solution" || exit 0
out=$(python3 -m pytest -q -p no:cacheprovider /tests/test_solution.py 2>&1)
echo "$out"
summary=$(printf '%s\n' "$out" | tail -n 1)
count() { printf '%s\n' "$summary" | grep -oE "[0-9]+ $1" | grep -oE '[0-9]+' | head -n 1; }
passed=$(count passed); failed=$(count failed); errors=$(count 'errors?')
passed=${passed:-0}; failed=$((${failed:-0} + ${errors:-0}))
if [ $((passed + failed)) -gt 0 ]; then
  python3 -c "print(round($passed / ($passed + $failed), 6))" > /logs/verifier/pass_ratio.txt
fi
collect_fails() { printf '%s\n' "$1" | grep -q "errors\? during collection"; }
if collect_fails "$out"; then
  # Only a test file broken independently of the solution falls back to the basic check.
  base=$(mktemp -d) && cp .buggy_solution.py "$base/solution.py"
  bout=$(cd "$base" && PYTHONPATH="$base" python3 -m pytest -q -p no:cacheprovider --collect-only /tests/test_solution.py 2>&1)
  if collect_fails "$bout"; then
    echo "test file cannot be collected: basic check (changed, compiles, imports) decides"
    echo 1 > /logs/verifier/reward.txt
  fi
elif [ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
fi
exit 0
"""

TEST_STATE = '''"""The Harbor-side check: the verifier wrote reward 1; pass_ratio is reported."""

from pathlib import Path

LOGS = Path("/logs/verifier")


def test_reward_is_one():
    ratio = (LOGS / "pass_ratio.txt").read_text().strip() if (LOGS / "pass_ratio.txt").exists() else "0"
    print(f"pass_ratio={ratio}")
    assert (LOGS / "reward.txt").read_text().strip() == "1"
'''

HARBOR_TOML = """\
version = "1.0"

[metadata]
category = "debugging"
tags = ["python", "bug-fix"]

[verifier]
timeout_sec = 300.0

[agent]
timeout_sec = 1800.0

[environment]
build_timeout_sec = 600.0
"""


class NotExportable(InteropError, ValueError):
    """A task that has no single-file BugsInPy form."""


def _hidden_and_visible_tests(task: Task, tree: dict[str, str]) -> dict[str, str]:
    tests = dict(task.hidden_files())
    for rel in task.test_files:
        if rel in tree:
            tests[rel] = tree[rel]
    return tests


def export_files(task: Task) -> dict[str, bytes]:
    """The BugsInPy-v2 task dir of `task` as path -> bytes; raises NotExportable."""
    with tempfile.TemporaryDirectory(prefix="sdebench-export-") as tmp:
        tree = repo_mod.read_tree(repo_mod.unbundle(task.bundle, Path(tmp) / "repo"))
    sources = sorted(r for r in tree if r.endswith(".py") and r not in task.test_files)
    if sources != [SOLUTION]:
        raise NotExportable(f"not a single-file task: its Python sources are {', '.join(sources) or 'none'}")
    files: dict[str, bytes] = {}
    originals = task.path / ORIGINALS if task.path else None
    if originals and originals.is_dir():
        for p in sorted(originals.rglob("*")):
            if p.is_file():
                files[p.relative_to(originals).as_posix()] = p.read_bytes()
    if task.grader == GRADER and SRC_TEST not in files:
        # The hidden test is the observation rewrite: only the original is the dataset's test file.
        raise NotExportable(f"its original test file ({ORIGINALS}/{SRC_TEST}) is missing")
    tests = _hidden_and_visible_tests(task, tree) if SRC_TEST not in files else {SRC_TEST: ""}
    if len(tests) != 1:
        raise NotExportable(f"needs exactly one test file, has {len(tests)}")
    files[SRC_SOLUTION] = tree[SOLUTION].encode()
    files.setdefault(SRC_TEST, next(iter(tests.values()), "").encode())
    files.setdefault(INSTRUCTION, (task.statement.rstrip("\n") + "\n").encode())
    meta = {"source": "sdebench", "task_id": task.id, "family": task.family, "variant": task.variant}
    files.setdefault(METADATA, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
    files.setdefault("task.toml", HARBOR_TOML.encode())
    files.setdefault("environment/Dockerfile", DOCKERFILE.encode())
    files.setdefault("tests/test.sh", TEST_SH.encode())
    files.setdefault("tests/test_state.py", TEST_STATE.encode())
    files.setdefault("tests/config.json", b'{\n  "test_weights": {"test_reward_is_one": 1.0}\n}\n')
    return files


def export_parquet(tasks: list[Task], out: Path) -> Report:
    """Write `tasks` as a BugsInPy-v2 parquet at `out`; tasks without a single-file form are skipped.

    When no task exports, no file is written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    report = Report()
    paths: list[str] = []
    blobs: list[bytes] = []
    for task in tasks:
        try:
            blobs.append(pack_tar(export_files(task)))
        except (NotExportable, OSError, repo_mod.RepoError) as e:
            report.skipped.append(Skipped(task.id, str(e)))
            continue
        paths.append(task.id)
        report.done.append(task.id)
    if not report.done:
        return report  # nothing to write: the caller says why
    table = pa.table({"path": pa.array(paths, pa.string()), "task_binary": pa.array(blobs, pa.binary())})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(out)
    return report
