"""The task record: load and save `tasks/<task_id>/` (selecting tasks: sdebench.tasks.selection).

A task dir holds `task.toml` (metadata and test ids), `repo.bundle` (full history, HEAD = the
buggy state), `hidden/` (the held-out observation tests, repo-relative paths), `observed/` (the
visible tests rewritten as observation tests, same paths as in the repo), `expected.json` (the
observations the oracle fix gives for every graded test: the answer key, never copied into any
sandbox), `oracle.patch` and `conventional.patch`.
"""

from __future__ import annotations

from sdebench.errors import TaskError

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from sdebench.tasks.graders import DEFAULT_GRADER, GRADERS, is_target
from sdebench.tasks.artifacts import BOTTLENECKS, COMPETENCIES, RECALL, SOURCES, tier_of

TASK_FILE = "task.toml"
DIGEST_SCHEME = "fresh1"  # sdebench.generation.fresh.SCHEME
DIGEST_RE = re.compile(rf"^{DIGEST_SCHEME}:[0-9a-f]{{64}}$")
BUNDLE = "repo.bundle"
HIDDEN_DIR = "hidden"
OBSERVED_DIR = "observed"
EXPECTED = "expected.json"
ORACLE_PATCH = "oracle.patch"
CONVENTIONAL_PATCH = "conventional.patch"
FORMAT_VERSION = 2
# The `grader` field names a grader registered in sdebench.tasks.graders ("sdebench": two-phase grading
# of the test groups with observed hidden tests; "bugsinpy": the BugsInPy-v2 verifier rules for
# imported single-file tasks, which carry no FAIL_TO_PASS ids) or gives one as `package.module:Name`.


@dataclass(frozen=True)
class Tests:
    """Test node ids per group."""

    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    hidden_to_pass: tuple[str, ...]

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Group name -> ids, in grading order."""
        return {"FAIL_TO_PASS": self.fail_to_pass, "PASS_TO_PASS": self.pass_to_pass, "HIDDEN_TO_PASS": self.hidden_to_pass}


SCALE_TAG = "memory-scale="  # the tag a task generated at a non-default memory scale carries


def memory_scale_of(tags) -> str | None:
    """The memory-scale label in a task's tags (None: the default scale)."""
    return next((t[len(SCALE_TAG):] for t in tags if t.startswith(SCALE_TAG)), None)

@dataclass(frozen=True)
class Task:
    """One emitted task; `path` is its dir (None until saved)."""

    id: str
    family: str
    variant: int
    source: str
    bottleneck: str
    statement: str
    fact: str
    fact_tokens: tuple[str, ...]
    conventional_guess: str
    modules: int
    commits: int
    head_sha: str
    tests: Tests
    memory_artifacts: tuple[str, ...]
    test_files: tuple[str, ...]
    tags: tuple[str, ...] = ()
    description: str = ""
    grader: str = DEFAULT_GRADER
    test_time_limit_s: float | None = None  # per-test limit from the oracle's test times (None: the config's)
    set_digest: str | None = None  # digest of the seed of a fresh private set (None: the published set)
    competency: str = RECALL  # how the fact must be worked out of memory (artifacts.COMPETENCIES)
    path: Path | None = field(default=None, compare=False)

    @property
    def tier(self) -> str:
        """The task's tier: `recall` or `hard` (derived from its competency)."""
        return tier_of(self.competency)

    @property
    def memory_scale(self) -> str | None:
        """The memory scale the task was generated at (`--scale`), None as the family emits it."""
        return memory_scale_of(self.tags)

    # --- files of the task dir -------------------------------------------------------
    def _file(self, name: str) -> Path:
        if self.path is None:
            raise TaskError(f"task {self.id} has no directory")
        return self.path / name

    @property
    def bundle(self) -> Path:
        """The git bundle holding the repo."""
        return self._file(BUNDLE)

    @property
    def hidden_dir(self) -> Path:
        """The dir of hidden tests (repo-relative layout)."""
        return self._file(HIDDEN_DIR)

    def hidden_files(self) -> dict[str, str]:
        """Hidden test files as repo-relative path -> content."""
        return _tree(self.hidden_dir)

    def observed_files(self) -> dict[str, str]:
        """The visible test files as observation tests, repo-relative path -> content (empty if none)."""
        root = self._file(OBSERVED_DIR)
        return _tree(root) if root.is_dir() else {}

    def expected_observations(self) -> dict[str, list]:
        """Test instance id -> the observations the oracle fix gives (the answer key; host only)."""
        try:
            doc = json.loads(self._file(EXPECTED).read_text())
        except (OSError, ValueError) as e:
            raise TaskError(f"{self._file(EXPECTED)}: cannot read the expected observations: {e}") from None
        obs = doc.get("observations") if isinstance(doc, dict) else None
        if not isinstance(obs, dict):
            raise TaskError(f"{self._file(EXPECTED)}: no 'observations' table")
        return obs

    @property
    def oracle_patch(self) -> str:
        """The reference fix as a unified diff."""
        return self._file(ORACLE_PATCH).read_text()

    @property
    def conventional_patch(self) -> str:
        """The conventional-guess fix as a unified diff."""
        return self._file(CONVENTIONAL_PATCH).read_text()

    def content_hash(self) -> str:
        """A hash of every file of the task dir: results are keyed by it."""
        h = hashlib.sha256()
        root = self._file("")
        for p in sorted(root.rglob("*")):
            if p.is_file():
                h.update(p.relative_to(root).as_posix().encode() + b"\0")
                h.update(hashlib.sha256(p.read_bytes()).digest())
        return h.hexdigest()[:16]

    # --- toml ----------------------------------------------------------------------------
    def to_toml(self) -> str:
        """The task.toml text."""
        doc = {
            "format": FORMAT_VERSION,
            "id": self.id,
            "family": self.family,
            "variant": self.variant,
            "source": self.source,
            "bottleneck": self.bottleneck,
            "competency": self.competency,
            "tags": list(self.tags),
            "description": self.description,
            "statement": self.statement,
            "fact": self.fact,
            "fact_tokens": list(self.fact_tokens),
            "conventional_guess": self.conventional_guess,
            "repo": {
                "modules": self.modules,
                "commits": self.commits,
                "head_sha": self.head_sha,
                "memory_artifacts": list(self.memory_artifacts),
                "test_files": list(self.test_files),
            },
            "tests": {
                "FAIL_TO_PASS": list(self.tests.fail_to_pass),
                "PASS_TO_PASS": list(self.tests.pass_to_pass),
                "HIDDEN_TO_PASS": list(self.tests.hidden_to_pass),
            },
        }
        if self.grader != DEFAULT_GRADER:
            doc["grader"] = self.grader
        if self.test_time_limit_s is not None:
            doc["grading"] = {"test_time_limit_s": float(self.test_time_limit_s)}
        if self.set_digest is not None:
            doc["set_digest"] = self.set_digest
        return tomli_w.dumps(doc, multiline_strings=True)


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


_FIELDS: dict[str, type] = {
    "id": str,
    "family": str,
    "variant": int,
    "source": str,
    "bottleneck": str,
    "statement": str,
    "fact": str,
    "fact_tokens": list,
    "conventional_guess": str,
}


def _need(doc: dict, key: str, kind: type, where: str, path: Path):
    if key not in doc:
        raise TaskError(f"{path}: missing field '{where}{key}'")
    value = doc[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TaskError(f"{path}: field '{where}{key}' must be {kind.__name__}, got {type(value).__name__}")
    if kind is list and not all(isinstance(v, str) for v in value):
        raise TaskError(f"{path}: field '{where}{key}' must be a list of strings")
    return value


def load(task_dir: str | Path) -> Task:
    """Load a task dir; a malformed or incomplete one raises TaskError naming the file and field."""
    task_dir = Path(task_dir)
    path = task_dir / TASK_FILE
    if not path.is_file():
        raise TaskError(f"{path}: no such file")
    try:
        doc = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TaskError(f"{path}: not valid TOML: {e}") from None
    vals = {k: _need(doc, k, t, "", path) for k, t in _FIELDS.items()}
    repo = _need(doc, "repo", dict, "", path)
    tests = _need(doc, "tests", dict, "", path)
    if vals["source"] not in SOURCES:
        raise TaskError(f"{path}: field 'source' must be one of {', '.join(SOURCES)}, got {vals['source']!r}")
    if vals["bottleneck"] not in BOTTLENECKS:
        raise TaskError(f"{path}: field 'bottleneck' must be one of {', '.join(BOTTLENECKS)}, got {vals['bottleneck']!r}")
    competency = doc.get("competency", RECALL)  # tasks written before competencies existed are recall tasks
    if competency not in COMPETENCIES:
        raise TaskError(f"{path}: field 'competency' must be one of {', '.join(COMPETENCIES)}, got {competency!r}")
    grader = doc.get("grader", DEFAULT_GRADER)
    if not isinstance(grader, str) or not (grader in GRADERS or is_target(grader)):
        raise TaskError(
            f"{path}: field 'grader' must be one of {', '.join(GRADERS)} or package.module:Name, got {grader!r}"
        )
    groups = {g: tuple(_need(tests, g, list, "tests.", path)) for g in ("FAIL_TO_PASS", "PASS_TO_PASS", "HIDDEN_TO_PASS")}
    # Imported BugsInPy tasks are graded by the pytest summary of their hidden file, not by ids.
    for g in ("FAIL_TO_PASS", "HIDDEN_TO_PASS") if grader == DEFAULT_GRADER else ():
        if not groups[g]:
            raise TaskError(f"{path}: field 'tests.{g}' must not be empty")
    for name in (BUNDLE, ORACLE_PATCH, CONVENTIONAL_PATCH):
        if not (task_dir / name).is_file():
            raise TaskError(f"{task_dir / name}: missing task file")
    if not (task_dir / HIDDEN_DIR).is_dir():
        raise TaskError(f"{task_dir / HIDDEN_DIR}: missing hidden-test dir")
    if grader == DEFAULT_GRADER and not (task_dir / EXPECTED).is_file():
        raise TaskError(f"{task_dir / EXPECTED}: missing expected observations (regenerate the task)")
    limit = (doc.get("grading") or {}).get("test_time_limit_s") if isinstance(doc.get("grading"), dict) else None
    if limit is not None and (not isinstance(limit, int | float) or isinstance(limit, bool) or limit <= 0):
        raise TaskError(f"{path}: field 'grading.test_time_limit_s' must be a positive number, got {limit!r}")
    digest = doc.get("set_digest")
    if digest is not None and not (isinstance(digest, str) and DIGEST_RE.match(digest)):
        raise TaskError(f"{path}: field 'set_digest' must be a fresh-set digest ({DIGEST_SCHEME}:<64 hex>), got {digest!r}")
    return Task(
        id=vals["id"],
        family=vals["family"],
        variant=vals["variant"],
        source=vals["source"],
        bottleneck=vals["bottleneck"],
        statement=vals["statement"],
        fact=vals["fact"],
        fact_tokens=tuple(vals["fact_tokens"]),
        conventional_guess=vals["conventional_guess"],
        modules=_need(repo, "modules", int, "repo.", path),
        commits=_need(repo, "commits", int, "repo.", path),
        head_sha=_need(repo, "head_sha", str, "repo.", path),
        memory_artifacts=tuple(_need(repo, "memory_artifacts", list, "repo.", path)),
        test_files=tuple(_need(repo, "test_files", list, "repo.", path)),
        tests=Tests(groups["FAIL_TO_PASS"], groups["PASS_TO_PASS"], groups["HIDDEN_TO_PASS"]),
        tags=tuple(doc.get("tags", [])),
        description=str(doc.get("description", "")),
        grader=grader,
        test_time_limit_s=float(limit) if limit is not None else None,
        set_digest=digest,
        competency=competency,
        path=task_dir,
    )


def save_meta(task: Task, task_dir: Path) -> None:
    """Write task.toml into `task_dir` (the other files are written by the engine)."""
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / TASK_FILE).write_text(task.to_toml())


def discover(tasks_dir: str | Path) -> list[Path]:
    """Every task dir below `tasks_dir`, sorted by name."""
    root = Path(tasks_dir)
    if not root.is_dir():
        raise TaskError(f"{root}: tasks dir does not exist")
    return sorted(p.parent for p in root.glob(f"*/{TASK_FILE}"))
