"""An OpenEnv-style reset/step/state environment over sdebench tasks (ours and imported ones).

`reset(seed, task_id)` checks out the task's repo and runs its tests once (the baseline);
`step(action)` applies a full replacement file (`patched_code`, optional `path`) or a unified
`diff`, runs the tests again in a sandbox and returns the observation with the PatchBench-style
shaped reward (sdebench.grading.rewards.shaped) measured against the baseline. Hidden tests are added to
a throw-away copy for each run and are reported only as counts, never by name or content.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sdebench.grading.rewards import shaped
from sdebench.grading.testrun import TestRun, module_names, run_tests
from sdebench.sandbox import SandboxError, make_factory
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import record as task_mod
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task
from sdebench.tasks.selection import select

DEFAULT_MAX_STEPS = 8
DEFAULT_TIMEOUT = 120.0
HIDDEN_PREFIX = "hidden:"
BUGSINPY_TEST = "tests/test_solution.py"
MAX_LISTED = 30
_DIFF_PATH = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?(\S+)")


class EnvError(ValueError):
    """A request the environment cannot serve (the message says why)."""


class UnknownTask(EnvError):
    """No task with that id."""


class NoEpisode(EnvError):
    """step/state before reset."""


class EpisodeDone(EnvError):
    """step after the episode ended."""


class BadAction(EnvError):
    """An action that is not well-formed (not counted as a step)."""


class SandboxUnavailable(EnvError):
    """The sandbox could not run the tests (the step is not counted)."""


def is_test_path(rel: str, declared: tuple[str, ...] = ()) -> bool:
    """Whether `rel` is a test or pytest-config file (agents may not edit those here)."""
    parts = rel.split("/")
    name = parts[-1]
    return (
        rel in declared
        or "tests" in parts[:-1]
        or name in ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
        or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))
    )


def patch_paths(patch: str) -> list[str]:
    """Repo-relative paths a unified diff touches (old and new sides, /dev/null left out)."""
    out: list[str] = []
    for line in patch.splitlines():
        m = _DIFF_PATH.match(line)
        if m and m.group(1) != "/dev/null" and m.group(1) not in out:
            out.append(m.group(1))
    return out


def target_files(task: Task, tree: dict[str, str]) -> list[str]:
    """The files a fix is expected in: those the oracle patch touches, else the non-test .py files."""
    if task.path is not None and (task.path / task_mod.ORACLE_PATCH).is_file():
        touched = [p for p in patch_paths(task.oracle_patch) if p in tree]
        if touched:
            return touched
    return sorted(r for r in tree if r.endswith(".py") and not is_test_path(r, task.test_files))


def safe_rel(rel: Any) -> str:
    """A normalised repo-relative path, or BadAction."""
    if not isinstance(rel, str) or not rel.strip():
        raise BadAction("'path' must be a non-empty string")
    parts = [p for p in rel.strip().split("/") if p not in ("", ".")]
    if rel.startswith("/") or not parts or ".." in parts or parts[0] == ".git":
        raise BadAction(f"path {rel!r} is not a file inside the repo")
    return "/".join(parts)


@dataclass
class Evaluation:
    """One test run: which test ids passed (hidden ones prefixed), and what went wrong."""

    passed: dict[str, bool] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass
class Observation:
    """What the agent sees after reset or step."""

    episode_id: str
    task_id: str
    task_description: str
    current_code: dict[str, str]
    failing_tests: str
    step_number: int
    max_steps: int
    reward: float = 0.0
    reward_breakdown: dict[str, float] | None = None
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class Episode:
    """The state of the running episode."""

    episode_id: str
    task: Task
    seed: int
    workdir: Path
    repo: Path
    targets: list[str]
    baseline: Evaluation
    last: Evaluation
    step_number: int = 0
    done: bool = False
    rewards: list[float] = field(default_factory=list)


class TaskStore:
    """The tasks of a tasks dir, loaded lazily; shared by environments (thread-safe)."""

    def __init__(self, tasks_dir: str | Path):
        self.tasks_dir = Path(tasks_dir)
        self._lock = threading.Lock()
        self._tasks: dict[str, Task] | None = None
        self._baselines: dict[tuple[str, str], Evaluation] = {}
        self.errors: list[str] = []

    def _load(self) -> dict[str, Task]:
        with self._lock:
            if self._tasks is None:
                self._tasks = {t.id: t for t in select(self.tasks_dir, on_error=self.errors.append)}
            return self._tasks

    def ids(self) -> list[str]:
        """Task ids, sorted."""
        return sorted(self._load())

    def get(self, task_id: str) -> Task:
        """The task `task_id`, or UnknownTask."""
        tasks = self._load()
        if task_id not in tasks:
            raise UnknownTask(f"unknown task {task_id!r} ({len(tasks)} tasks available; GET / lists them)")
        return tasks[task_id]

    def baseline(self, task: Task, compute) -> Evaluation:
        """The test status of `task` at HEAD, computed once per task content (failed runs are not kept)."""
        key = (task.id, task.content_hash())
        with self._lock:
            if key in self._baselines:
                return self._baselines[key]
        ev = compute()
        if ev.error is None:
            with self._lock:
                self._baselines[key] = ev
        return ev

    def pick(self, seed: int) -> Task:
        """The task a seed selects when no id is given."""
        ids = self.ids()
        if not ids:
            raise UnknownTask(f"no tasks in {self.tasks_dir}")
        return self.get(ids[seed % len(ids)])


class CodeFixEnv:
    """One environment instance: at most one running episode; reset starts a new one."""

    def __init__(
        self,
        store: TaskStore,
        factory: SandboxFactory | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        timeout: float = DEFAULT_TIMEOUT,
        work_root: str | Path | None = None,
    ):
        self.store = store
        self.factory = factory or make_factory({"backend": "unsafe_local"})
        self.max_steps = int(max_steps)
        self.timeout = float(timeout)
        self.work_root = work_root
        self.episode: Episode | None = None

    # --- the OpenEnv contract ------------------------------------------------------------
    def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start an episode on `task_id` (or the task `seed` selects) and return the first observation."""
        seed = 0 if seed is None else int(seed)
        task = self.store.get(task_id) if task_id is not None else self.store.pick(seed)
        self.close()
        work = Path(tempfile.mkdtemp(prefix=f"sdebench-env-{task.id}-", dir=self.work_root))
        try:
            repo = repo_mod.unbundle(task.bundle, work / "repo")
            tree = repo_mod.read_tree(repo)
            baseline = self.store.baseline(task, lambda: self._evaluate(task, repo, []))
        except SandboxError as e:
            shutil.rmtree(work, ignore_errors=True)
            raise SandboxUnavailable(f"the sandbox failed: {e}") from None
        except Exception:
            shutil.rmtree(work, ignore_errors=True)
            raise
        self.episode = Episode(
            episode_id=secrets.token_hex(8),
            task=task,
            seed=seed,
            workdir=work,
            repo=repo,
            targets=target_files(task, tree),
            baseline=baseline,
            last=baseline,
        )
        return self._observation(0.0, None, self._info(baseline, None, True))

    def step(self, action: dict[str, Any]) -> Observation:
        """Apply one action and return the graded observation."""
        ep = self._require()
        if ep.done:
            raise EpisodeDone("the episode is done; call reset to start a new one")
        edits = self._parse(ep, action)
        ep.step_number += 1
        error = None
        valid = True
        if isinstance(edits, str):  # a diff
            edits, error = self._diff_edits(ep, edits)
            valid = error is None
        if valid:
            bad = {r: m for r, c in edits.items() if r.endswith(".py") and (m := _syntax_error(r, c))}
            if bad:
                valid, error = False, "; ".join(f"{r}: {m}" for r, m in bad.items())
        if not valid:
            b = shaped(False, 0, len(_failing(ep.baseline)), 0, False)
            return self._finish(ep, b, self._info(ep.last, b, False, error))
        before = {rel: (ep.repo / rel).read_text() if (ep.repo / rel).is_file() else None for rel in edits}
        _write(ep.repo, edits)
        try:
            ev = self._evaluate(ep.task, ep.repo, list(edits))
        except SandboxError as e:
            # Nothing was graded: undo the step so the client can retry once the sandbox is back.
            _write(ep.repo, before)
            ep.step_number -= 1
            raise SandboxUnavailable(f"the sandbox failed, step not counted: {e}") from None
        ep.targets += [rel for rel in edits if rel not in ep.targets]
        ep.last = ev
        newly = sum(1 for t, ok in ev.passed.items() if ok and not ep.baseline.passed.get(t, False))
        regressions = sum(1 for t, ok in ep.baseline.passed.items() if ok and not ev.passed.get(t, False))
        orig_failing = len(_failing(ep.baseline) | {t for t in ev.passed if t not in ep.baseline.passed})
        b = shaped(True, newly, orig_failing, regressions, _all_pass(ev))
        return self._finish(ep, b, self._info(ev, b, True, None, newly, regressions))

    def state(self) -> dict[str, Any]:
        """The episode's state: ids, step counters, rewards so far, done."""
        ep = self._require()
        return {
            "episode_id": ep.episode_id,
            "task_id": ep.task.id,
            "seed": ep.seed,
            "step_number": ep.step_number,
            "max_steps": self.max_steps,
            "done": ep.done,
            "rewards": list(ep.rewards),
            "target_files": list(ep.targets),
            "all_tests_pass": _all_pass(ep.last),
        }

    def close(self) -> None:
        """Drop the running episode and its files."""
        if self.episode is not None:
            shutil.rmtree(self.episode.workdir, ignore_errors=True)
            self.episode = None

    # --- internals -----------------------------------------------------------------------
    def _require(self) -> Episode:
        if self.episode is None:
            raise NoEpisode("no episode: call reset first")
        return self.episode

    def _parse(self, ep: Episode, action: Any) -> dict[str, str] | str:
        if not isinstance(action, dict):
            raise BadAction("an action is an object with 'patched_code' (and optional 'path') or 'diff'")
        unknown = sorted(set(action) - {"patched_code", "path", "diff"})
        if unknown:
            raise BadAction(f"unknown action field(s): {', '.join(unknown)}")
        has_code, has_diff = action.get("patched_code") is not None, action.get("diff") is not None
        if has_code == has_diff:
            raise BadAction("give exactly one of 'patched_code' and 'diff'")
        if has_diff:
            if not isinstance(action["diff"], str) or not action["diff"].strip():
                raise BadAction("'diff' must be a non-empty unified diff")
            for rel in patch_paths(action["diff"]):
                self._check_editable(ep, safe_rel(rel))
            return action["diff"]
        if not isinstance(action["patched_code"], str):
            raise BadAction("'patched_code' must be a string (the full new file)")
        if action.get("path") is None:
            if len(ep.targets) != 1:
                raise BadAction(f"this task has several files ({', '.join(ep.targets)}): say which one in 'path'")
            rel = ep.targets[0]
        else:
            rel = safe_rel(action["path"])
        self._check_editable(ep, rel)
        return {rel: action["patched_code"]}

    def _check_editable(self, ep: Episode, rel: str) -> None:
        if is_test_path(rel, ep.task.test_files):
            raise BadAction(f"{rel} is a test or pytest-config file; only source files can be changed")

    def _diff_edits(self, ep: Episode, patch: str) -> tuple[dict[str, str], str | None]:
        """The files a diff produces, applied to a scratch copy (the repo is untouched)."""
        scratch = ep.workdir / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(ep.repo, scratch, ignore=shutil.ignore_patterns(".git"))
        try:
            repo_mod.apply_patch(scratch, patch)
        except repo_mod.RepoError as e:
            return {}, f"the diff does not apply: {str(e).rsplit(': ', 1)[-1]}"
        edits = {}
        for rel in patch_paths(patch):
            p = scratch / rel
            if p.is_file():
                edits[rel] = p.read_text(errors="replace")
        shutil.rmtree(scratch, ignore_errors=True)
        if not edits:
            return {}, "the diff changes no file"
        return edits, None

    def _evaluate(self, task: Task, repo: Path, changed: list[str]) -> Evaluation:
        """Run the task's tests on a copy of `repo` plus the hidden tests, in a fresh sandbox."""
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=repo.parent))
        try:
            ws = run_dir / "ws"
            shutil.copytree(repo, ws, ignore=shutil.ignore_patterns(".git", "__pycache__"))
            hidden = task.hidden_files()
            for rel, content in hidden.items():
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                (ws / rel).write_text(content)
            if task.grader == "bugsinpy":
                paths, modules = [BUGSINPY_TEST], ["solution"]
            else:
                ids = [i for g in task.tests.groups().values() for i in g]
                paths, modules = sorted({i.split("::")[0] for i in ids}), module_names(changed)
            with self.factory.open(ws) as box:
                run = run_tests(box, paths, modules, timeout=self.timeout)
            return _evaluation(task, run, set(hidden))
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def _finish(self, ep: Episode, b, info: dict[str, Any]) -> Observation:
        ep.rewards.append(b.normalized)
        ep.done = bool(info["all_tests_pass"]) or ep.step_number >= self.max_steps
        return self._observation(b.normalized, asdict(b), info)

    def _info(self, ev: Evaluation, b, valid: bool, error: str | None = None, newly: int = 0,
              regressions: int = 0) -> dict[str, Any]:
        info: dict[str, Any] = {
            "tests_passing": sum(ev.passed.values()),
            "tests_failing": sum(not ok for ok in ev.passed.values()),
            "newly_passing": newly,
            "regressions": regressions,
            "is_valid_python": valid,
            "all_tests_pass": _all_pass(ev),
            "reward_breakdown": asdict(b) if b is not None else None,
        }
        if ev.import_errors:
            info["import_errors"] = dict(ev.import_errors)
        if ev.error:
            info["test_error"] = ev.error
        if error:
            info["error"] = error
        return info

    def _observation(self, reward: float, breakdown: dict | None, info: dict[str, Any]) -> Observation:
        ep = self._require()
        return Observation(
            episode_id=ep.episode_id,
            task_id=ep.task.id,
            task_description=ep.task.statement,
            current_code={rel: _read(ep.repo / rel) for rel in ep.targets},
            failing_tests=summary(ep.last),
            step_number=ep.step_number,
            max_steps=self.max_steps,
            reward=reward,
            reward_breakdown=breakdown,
            done=ep.done,
            info=info,
        )


def _write(repo: Path, files: dict[str, str | None]) -> None:
    """Write (or, for None, delete) repo files."""
    for rel, content in files.items():
        p = repo / rel
        if content is None:
            p.unlink(missing_ok=True)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


def _read(p: Path) -> str:
    return p.read_text(errors="replace") if p.is_file() else ""


def _syntax_error(rel: str, content: str) -> str | None:
    try:
        compile(content, rel, "exec", dont_inherit=True)
    except SyntaxError as e:
        return f"{type(e).__name__}: {e.msg} (line {e.lineno})"
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def _evaluation(task: Task, run: TestRun, hidden_files: set[str]) -> Evaluation:
    ev = Evaluation(import_errors=dict(run.import_errors), error=run.error)
    if task.grader == "bugsinpy":
        # The imported suite is hidden: every reported test counts, under a hidden name.
        for k, v in run.tests.items():
            ev.passed[HIDDEN_PREFIX + k] = v.passed
        return ev
    for group, ids in task.tests.groups().items():
        for i in ids:
            r = run.outcome(i)
            hidden = group == "HIDDEN_TO_PASS" or i.split("::")[0] in hidden_files
            key = HIDDEN_PREFIX + i if hidden else i
            ev.passed[key] = r.passed
            if not r.passed and not hidden:
                ev.messages[key] = r.message
    return ev


def _failing(ev: Evaluation) -> set[str]:
    return {t for t, ok in ev.passed.items() if not ok}


def _all_pass(ev: Evaluation) -> bool:
    return bool(ev.passed) and all(ev.passed.values()) and not ev.import_errors and ev.error is None


def summary(ev: Evaluation) -> str:
    """The human-readable test status: visible failing tests by name, hidden ones as a count."""
    visible = {t: ok for t, ok in ev.passed.items() if not t.startswith(HIDDEN_PREFIX)}
    hidden = {t: ok for t, ok in ev.passed.items() if t.startswith(HIDDEN_PREFIX)}
    lines = [f"{sum(ev.passed.values())} of {len(ev.passed)} tests pass."]
    failing = [t for t, ok in visible.items() if not ok]
    if failing:
        lines.append("FAILING TESTS:")
        for t in failing[:MAX_LISTED]:
            msg = ev.messages.get(t, "").strip().splitlines()
            lines.append(f"{t}" + (f"  ({msg[-1][:200]})" if msg else ""))
        if len(failing) > MAX_LISTED:
            lines.append(f"... and {len(failing) - MAX_LISTED} more")
    if hidden:
        bad = sum(not ok for ok in hidden.values())
        lines.append(f"Hidden tests: {bad} of {len(hidden)} failing.")
    elif ev.error is None and not ev.passed:
        lines.append("No test ran.")
    for mod, msg in sorted(ev.import_errors.items()):
        lines.append(f"IMPORT ERROR in {mod}: {(msg.strip().splitlines() or [''])[-1][:300]}")
    if ev.error:
        lines.append(f"TEST RUN ERROR: {ev.error}")
    return "\n".join(lines)
