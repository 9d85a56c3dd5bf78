"""An OpenEnv-style reset/step/state environment over sdebench tasks (ours and imported ones).

The sandbox is `local` (bubblewrap, the task store masked) unless a factory is given; an
`unsafe_local` factory is refused unless `allow_unsafe=True` names it. `reset(seed, task_id)`
checks out the task's repo; `step(action)` applies a full replacement file
(`patched_code`, optional `path`) or a unified `diff` and grades the repo with the task's grader
(`sdebench.grading.grade.grade`: pristine test files, honeypot, two phases, observations judged on
the host), then returns the observation with the grade's PatchBench-style shaped reward. A step
that is not valid Python (or a diff that does not apply) is not applied and scores what the
grader's guards score, 0: never more than an unchanged submission. At HEAD
the visible FAIL_TO_PASS tests and every held-out test fail by construction, so reset runs
nothing. What the observation says about held-out tests is what the grading options' feedback
policy allows (`binary` by default: only whether they all pass), never a name or content.
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

from sdebench.errors import SdebenchError
from sdebench.grading.feedback import reward_of
from sdebench.grading.grade import grade
from sdebench.grading.options import GradeOptions
from sdebench.grading.rules import is_protected
from sdebench.sandbox import make_factory
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import record as task_mod
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task
from sdebench.tasks.selection import select

DEFAULT_MAX_STEPS = 8
DEFAULT_TIMEOUT = 120.0
MAX_LISTED = 30
_DIFF_PATH = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?(\S+)")


class EnvError(SdebenchError, ValueError):
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


UNSAFE = "unsafe_local"


def refuse_unsafe(factory: SandboxFactory, allow_unsafe: bool) -> None:
    """Refuse a sandbox without isolation unless the caller named it with `allow_unsafe=True`: graded
    code would run on the host, beside the task store that holds the answer key."""
    if getattr(factory, "name", None) == UNSAFE and not allow_unsafe:
        raise EnvError(f"sandbox {UNSAFE} runs graded code unisolated on the host: pass allow_unsafe=True "
                       f"(python -m sdebench.serve: --sandbox {UNSAFE}) to use it anyway")


def is_test_path(rel: str, declared: tuple[str, ...] = ()) -> bool:
    """Whether `rel` is a test or pytest-config file (agents may not edit those here: the grader
    restores them anyway, see sdebench.grading.rules.is_protected)."""
    return is_protected(rel, declared)


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
    """One grade as the environment shows it (held-out tests only as the feedback policy allows)."""

    visible: dict[str, bool] = field(default_factory=dict)  # visible test id -> passed
    held_out: dict[str, Any] | None = None  # Grade.public()["held_out"]
    guards: list[str] = field(default_factory=list)
    text: str = ""  # the grade's feedback
    resolved: bool = False
    reward: float = 0.0
    breakdown: dict[str, float] | None = None
    newly: int = 0
    regressions: int = 0


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
class EnvEpisode:
    """The state of the running episode."""

    episode_id: str
    task: Task
    seed: int
    workdir: Path
    repo: Path
    targets: list[str]
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
        grading: dict[str, Any] | None = None,
        allow_unsafe: bool = False,
    ):
        self.store = store
        # Default: bubblewrap with the task store masked (docs/grading.md); an unsafe backend only when named.
        self.factory = factory or make_factory({"backend": "local", "tasks_dir": str(Path(store.tasks_dir).resolve())})
        refuse_unsafe(self.factory, allow_unsafe)
        self.max_steps = int(max_steps)
        self.timeout = float(timeout)
        self.work_root = work_root
        # The grading options (the `grading` config group); `timeout` bounds each grading phase.
        self.grading = GradeOptions.from_mapping({"timeout": self.timeout, **(grading or {})})
        self.episode: EnvEpisode | None = None

    # --- the OpenEnv contract ------------------------------------------------------------
    def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start an episode on `task_id` (or the task `seed` selects) and return the first observation."""
        seed = 0 if seed is None else int(seed)
        task = self.store.get(task_id) if task_id is not None else self.store.pick(seed)
        self.close()
        work = Path(tempfile.mkdtemp(prefix="env-", dir=self.work_root))
        try:
            repo = repo_mod.unbundle(task.bundle, work / "repo")
            tree = repo_mod.read_tree(repo)
        except Exception:
            shutil.rmtree(work, ignore_errors=True)
            raise
        self.episode = EnvEpisode(
            episode_id=secrets.token_hex(8),
            task=task,
            seed=seed,
            workdir=work,
            repo=repo,
            targets=target_files(task, tree),
            last=self._at_head(task),
        )
        return self._observation(0.0, None, self._info(self.episode.last, True))

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
            # Scored as the grader's compile guard scores a submission that does not compile (0 on
            # every reward, like an unchanged one): a broken step must never out-earn doing nothing.
            r = reward_of({}, False, True, self.grading.step_cost)
            return self._finish(ep, r["shaped"], r["shaped_breakdown"], self._info(ep.last, False, error))
        before = {rel: (ep.repo / rel).read_text() if (ep.repo / rel).is_file() else None for rel in edits}
        _write(ep.repo, edits)
        g = grade(ep.task, ep.repo, self.factory, options=self.grading)
        if g.error:
            # Nothing was graded: undo the step so the client can retry once the sandbox is back.
            _write(ep.repo, before)
            ep.step_number -= 1
            raise SandboxUnavailable(f"the grade could not run, step not counted: {g.error}")
        ep.targets += [rel for rel in edits if rel not in ep.targets]
        ep.last = _evaluation(g)
        return self._finish(ep, ep.last.reward, ep.last.breakdown, self._info(ep.last, True))

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
            "all_tests_pass": ep.last.resolved,
        }

    def close(self) -> None:
        """Drop the running episode and its files."""
        if self.episode is not None:
            shutil.rmtree(self.episode.workdir, ignore_errors=True)
            self.episode = None

    # --- internals -----------------------------------------------------------------------
    def _require(self) -> EnvEpisode:
        if self.episode is None:
            raise NoEpisode("no episode: call reset first")
        return self.episode

    def _parse(self, ep: EnvEpisode, action: Any) -> dict[str, str] | str:
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

    def _check_editable(self, ep: EnvEpisode, rel: str) -> None:
        if is_test_path(rel, ep.task.test_files):
            raise BadAction(f"{rel} is a test or pytest-config file; only source files can be changed")

    def _diff_edits(self, ep: EnvEpisode, patch: str) -> tuple[dict[str, str], str | None]:
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

    def _at_head(self, task: Task) -> Evaluation:
        """The state at HEAD, by construction: FAIL_TO_PASS and every held-out test fail."""
        visible = {i: False for i in task.tests.fail_to_pass} | {i: True for i in task.tests.pass_to_pass}
        held = {"pass": False}
        if self.grading.feedback_hidden in ("counts", "tests"):
            n = len(task.tests.hidden_to_pass)
            held.update(failed=n, total=n, rechecks_failed=0)
        lines = [f"{len(task.tests.fail_to_pass)} of {len(visible)} visible tests fail at HEAD:"]
        lines += [f"- {i}" for i in task.tests.fail_to_pass[:MAX_LISTED]]
        return Evaluation(visible, held, [], "\n".join(lines) + "\nHeld-out tests fail.")

    def _finish(self, ep: EnvEpisode, reward: float, breakdown: dict | None, info: dict[str, Any]) -> Observation:
        ep.rewards.append(reward)
        ep.done = bool(info["all_tests_pass"]) or ep.step_number >= self.max_steps
        return self._observation(reward, breakdown, info)

    def _info(self, ev: Evaluation, valid: bool, error: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "tests_passing": sum(ev.visible.values()),
            "tests_failing": sum(not ok for ok in ev.visible.values()),
            "held_out": ev.held_out,
            "newly_passing": ev.newly,
            "regressions": ev.regressions,
            "is_valid_python": valid,
            "all_tests_pass": ev.resolved,
            "reward_breakdown": ev.breakdown,
            "feedback_policy": self.grading.feedback_hidden,
        }
        if ev.guards:
            info["guards"] = list(ev.guards)
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
            failing_tests=ep.last.text,
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


def _evaluation(g) -> Evaluation:
    """What the environment shows of a grade: its public view (the feedback policy applies)."""
    pub = g.public()
    visible = {t["id"]: t["outcome"] == "passed" for t in pub["visible"]}
    counts = pub.get("counts") or {}  # as the agent may know them (held-out tests as the policy says)
    held = pub["held_out"]
    newly = counts.get("FAIL_TO_PASS", {}).get("passed", 0) + counts.get("HIDDEN_TO_PASS", {}).get("passed", 0)
    p2p = counts.get("PASS_TO_PASS", {"passed": 0, "total": 0})
    return Evaluation(visible, held, list(g.guards), g.feedback, bool(g.resolved), float(g.reward.get("shaped") or 0.0),
                      g.reward.get("shaped_breakdown"), newly, p2p["total"] - p2p["passed"])
