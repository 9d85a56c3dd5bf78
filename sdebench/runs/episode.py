"""One episode: prepare the delivery, run the agent until submit or a limit, grade, feed the
failing output back and resume (at most `max_interventions` times), with metrics and trajectory.

`interventions` counts failing grades that were fed back (docs/design.md, 'Interventions'):
resolved at the first submit gives 0; unresolved after the cap gives the cap with resolved=false.

The episode's stop_reason says why it ended: `resolved`, `max_interventions` (unresolved after
the cap), a limit the agent hit (`max_turns`, `max_cost`, `max_wall`, ...), `agent_error` (the
agent's run failed after its model acted, for no reason outside it: unresolved), `gave_up`, or
`error` (an exception anywhere in the episode, a grade that could not run, or a run that ended in
error: a dead model, a broken set-up; it is recorded, never raised, never counted as unresolved,
and decided before the grade: a workspace that happens to pass after the model died is no more an
outcome than one that fails, else errors would be kept out of the rates only when they miss).

Grades get the options of the `grading` config group; the trajectory logs only what the agent may
learn of each grade (`Grade.public()`: its feedback policy decides what is said about held-out
tests), the record keeps the full counts and the policy.

A resubmission whose files are byte-identical to the previous graded one reuses that grade
(`reuse_unchanged_grades`, default on; the attempt says `grade_reused`): the tasks' tests are
deterministic, so grading the same files again only costs time.

The agent gets the public view of the task (sdebench.agents.base.AgentContext): the statement,
the delivery's prompt additions, a view of the toolbox and of the trajectory. Only an agent that
declares `needs_answer_key` (the reference agents) also gets the answer key. The workspace lives
under a temporary dir whose name does not name the task. The task's grader is looked up by its
`grader` field (sdebench.components). The episode returns a typed EpisodeRecord.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdebench.agents.base import STOP_ERROR, STOP_SUBMITTED, Agent, AgentContext, AnswerKey, Limits
from sdebench.delivery.carried import CarriedMemory
from sdebench.grading.grade import Grade
from sdebench.runs.record import Attempt, EpisodeRecord, Identity
from sdebench.runs.trajectory import Trajectory, TrajectoryView
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

Grader = Callable[..., Grade]
DEFAULT_MAX_INTERVENTIONS = 5


def limits_from(cfg: dict[str, Any]) -> Limits:
    """The Limits of `cfg['limits']` (missing keys keep their defaults)."""
    raw = dict(cfg.get("limits") or {})
    known = {k: raw[k] for k in ("max_turns", "max_cost_usd", "max_wall_s") if raw.get(k) is not None}
    return Limits(**known)


def grading_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """The grade options of `cfg['grading']` (validated: a bad one raises OptionError)."""
    from sdebench.grading.options import GradeOptions

    return GradeOptions.from_mapping(dict(cfg.get("grading") or {})).to_dict()


def _name(cfg: dict[str, Any], group: str) -> str:
    return str((cfg.get(group) or {}).get("name", "none"))


def identity(task: Task, cfg: dict[str, Any]) -> Identity:
    """The fields naming an episode: task metadata, delivery, agent, model and seed."""
    return Identity(
        task_id=task.id,
        family=task.family,
        variant=task.variant,
        source=task.source,
        bottleneck=task.bottleneck,
        delivery=_name(cfg, "delivery"),
        agent=_name(cfg, "agent"),
        model=_name(cfg, "model"),
        seed=int(cfg.get("seed") or 0),
    )


def fingerprint(root: Path) -> str:
    """A hash of every file under `root` except .git: equal fingerprints mean the same submission."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            p = Path(dirpath) / name
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            h.update(os.readlink(p).encode() if p.is_symlink() else p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


class _Grading:
    """Grades the agent's files after each run; an unchanged submission reuses the last grade."""

    def __init__(self, task: Task, sandbox, workspace: Path, work: Path, factory: SandboxFactory, grader: Grader, cache: bool,
                 options: dict[str, Any]):
        self.task, self.sandbox, self.workspace, self.work = task, sandbox, workspace, work
        self.factory, self.grader, self.cache, self.options = factory, grader, cache, options
        self.last: tuple[str, Grade] | None = None
        self.graded: Path | None = None  # the host dir graded last (for the final diff)

    def __call__(self, n: int) -> tuple[Grade, bool]:
        """Grade attempt `n`; returns the grade and whether it was reused."""
        # A sandbox whose files live on the host is graded in place: the grader makes its own
        # pristine copy. Otherwise the files are first copied out of the sandbox.
        if getattr(self.sandbox, "host_workspace", None) == self.workspace.resolve():
            host = self.workspace
        else:
            host = self.work / f"graded-{n}"
            if host.exists():
                shutil.rmtree(host)
            self.sandbox.sync_out(host)
        if self.graded not in (None, host, self.workspace):
            shutil.rmtree(self.graded, ignore_errors=True)
        self.graded = host
        fp = fingerprint(host) if self.cache else ""
        if self.cache and self.last is not None and self.last[0] == fp:
            return self.last[1], True
        g = self.grader(self.task, host, self.factory, **self.options)
        self.last = (fp, g)
        return g, False


def _tracker(task: Task, prepared, agent_obj, traj: Trajectory):
    """The host-side retrieval tracker of an episode (sdebench.runs.retrieval), or None if it cannot be built."""
    from sdebench.delivery.decisive import decisive_items
    from sdebench.runs.retrieval import Tracker

    try:
        return Tracker(decisive_items(task), workspace=prepared.workspace, index=prepared.memory,
                       injected_ids=prepared.injected, partial=bool(getattr(agent_obj, "runs_in_sandbox", False)))
    except Exception as e:  # noqa: BLE001 - diagnostics never cost the episode its record
        traj.log("error", error=f"retrieval diagnostics unavailable: {type(e).__name__}: {e}")
        return None


def _attempt(n: int, run_stop: str, turns: int, g: Grade, grade_s: float, reused: bool) -> Attempt:
    return Attempt(
        attempt=n,
        stop_reason=run_stop,
        turns=turns,
        resolved=bool(g.resolved),
        counts=g.counts,
        pass_ratio=g.pass_ratio,
        guards=list(g.guards),
        grade_error=g.error,
        grade_s=round(grade_s, 4),
        grade_reused=reused,
    )


def run_episode(
    task: Task,
    cfg: dict[str, Any],
    factory: SandboxFactory,
    *,
    trajectory_path: Path | None = None,
    work_root: Path | None = None,
    grader: Grader | None = None,
    agent: Agent | None = None,
    keep_workspace: bool = False,
    carried: CarriedMemory | None = None,
) -> EpisodeRecord:
    """Run one episode of `task` under `cfg` (the whole resolved config) and return its record; never raises.

    `carried` is memory earned on earlier tasks of a stream; the delivery mode applies it.
    `grader` replaces the task's own grader (tests); `agent` the one `cfg` names.
    """
    from sdebench.agents.tools import Toolbox
    from sdebench.components import build_agent, build_delivery, grader_for

    started = time.monotonic()
    ident = identity(task, cfg)
    rec = EpisodeRecord.start(ident)
    rec.set_digest = task.set_digest  # results on a private set stay told apart from the published one
    rec.memory_scale = task.memory_scale  # and results at another memory scale from the default one
    rec.feedback_hidden = str((cfg.get("grading") or {}).get("feedback_hidden", "binary"))
    try:
        traj = Trajectory(trajectory_path)
    except OSError as e:
        traj = Trajectory(None)
        rec.error = f"trajectory not writable: {e}"
    max_interventions = int(cfg.get("max_interventions", DEFAULT_MAX_INTERVENTIONS))
    rec.max_interventions = max_interventions  # the cap, so analyses count unresolved episodes at it
    limits = limits_from(cfg)
    work: Path | None = None
    sandbox = toolbox = agent_obj = tracker = None
    try:
        if work_root is not None:
            Path(work_root).mkdir(parents=True, exist_ok=True)
        options = grading_options(cfg)
        # A neutral name: the workspace path must not name the task (unsafe_local shows it as is).
        work = Path(tempfile.mkdtemp(prefix="ep-", dir=work_root))
        traj.log("episode_start", **vars(ident), max_interventions=max_interventions)
        prepared = build_delivery(cfg.get("delivery")).prepare(task, work, carried)
        rec.delivery_info = prepared.info
        agent_obj = agent if agent is not None else build_agent(cfg)
        tracker = _tracker(task, prepared, agent_obj, traj)
        # An agent that runs its own program in the sandbox (an installed CLI) names what to bind into it.
        mounts = tuple(agent_obj.sandbox_mounts(work)) if hasattr(agent_obj, "sandbox_mounts") else ()
        space = getattr(agent_obj, "address_space_mb", None)  # a runtime that reserves more than it uses (Bun)
        opts = {**({"mounts": mounts} if mounts else {}), **({"address_space_mb": space} if space else {})}
        sandbox = factory.open(prepared.workspace, **opts)
        tool_opts = dict(cfg.get("tools") or {})
        visible = (*task.tests.fail_to_pass, *task.tests.pass_to_pass)
        toolbox = Toolbox(
            sandbox, prepared.tools, prepared.memory, traj, visible_tests=visible,
            default_k=prepared.info.get("default_k", 5), observer=tracker, **tool_opts,
        )
        grade_fn = grader if grader is not None else grader_for(task)
        rec.setup_s = time.monotonic() - started
        ctx = AgentContext(
            statement=task.statement,
            prompt_additions=prepared.prompt_additions,
            toolbox=toolbox.view(),
            trajectory=TrajectoryView(traj),
            limits=limits,
            seed=rec.seed,
            started_at=started,
            answer_key=AnswerKey.of(task) if getattr(agent_obj, "needs_answer_key", False) else None,
            # Only an agent that runs its own program there (an installed CLI) holds the sandbox itself.
            sandbox=sandbox if getattr(agent_obj, "runs_in_sandbox", False) else None,
        )
        agent_obj.start(ctx)
        grading = _Grading(task, sandbox, prepared.workspace, work, factory, grade_fn,
                           bool(cfg.get("reuse_unchanged_grades", True)), options)
        interventions = 0
        while True:
            run = agent_obj.run()
            rec.turns += run.turns
            traj.log("run_end", stop_reason=run.stop_reason, turns=run.turns, error=run.error, extra=run.extra)
            t = time.monotonic()
            g, reused = grading(len(rec.attempts) + 1)
            grade_s = time.monotonic() - t
            rec.grading_s += grade_s
            rec.attempts.append(_attempt(len(rec.attempts) + 1, run.stop_reason, run.turns, g, grade_s, reused))
            traj.log("grade", **g.public())
            if g.error:
                # The grade could not run: an infrastructure failure, never an outcome.
                rec.stop_reason, rec.error = "error", f"grading failed: {g.error}"
                break
            if run.stop_reason == STOP_ERROR:
                # The run ended in error (a dead model, a broken set-up): no outcome, whatever was graded.
                rec.stop_reason, rec.error = STOP_ERROR, run.error or "the agent's run ended in an error"
                break
            if g.resolved:
                rec.resolved, rec.stop_reason, rec.resolved_at = True, "resolved", len(rec.attempts)
                break
            if run.stop_reason != STOP_SUBMITTED:
                rec.stop_reason = run.stop_reason
                if run.error:
                    rec.error = run.error
                break
            if time.monotonic() - started > limits.max_wall_s:
                rec.stop_reason = "max_wall"
                break
            if interventions >= max_interventions:
                rec.stop_reason = "max_interventions"
                break
            interventions += 1
            rec.interventions = interventions
            traj.log("feedback", intervention=interventions, text=g.feedback)
            rec.feedback.append(g.feedback)
            agent_obj.feedback(g.feedback)
        rec.final_diff = repo_mod.worktree_diff(grading.graded)
    except Exception as e:  # noqa: BLE001 - an episode failure is a record, never a crash of the sweep
        rec.resolved = False
        rec.stop_reason = "error"
        rec.error = f"{type(e).__name__}: {e}"
        traj.log("error", error=rec.error, traceback=traceback.format_exc())
    finally:
        if agent_obj is not None and hasattr(agent_obj, "close"):
            try:
                agent_obj.close()
            except Exception as e:  # noqa: BLE001 - closing must not lose the record
                traj.log("error", error=f"agent close failed: {type(e).__name__}: {e}")
        if sandbox is not None:
            try:
                sandbox.close()
            except Exception as e:  # noqa: BLE001 - closing must not lose the record
                traj.log("error", error=f"sandbox close failed: {type(e).__name__}: {e}")
        if work is not None and not keep_workspace:
            shutil.rmtree(work, ignore_errors=True)
    if toolbox is not None:
        stats = toolbox.stats()
        # an agent that runs its own tools (an installed CLI) counts them; the toolbox counts its own
        own = agent_obj.tool_calls() if agent_obj is not None and hasattr(agent_obj, "tool_calls") else {}
        rec.tool_calls = dict(Counter(own) + Counter(stats["tool_calls"]))
        rec.tool_errors = stats["tool_errors"]
        rec.tools_s = stats["tools_s"]
    if agent_obj is not None:
        u = agent_obj.usage
        rec.prompt_tokens, rec.completion_tokens, rec.cached_tokens = u.prompt_tokens, u.completion_tokens, u.cached_tokens
        rec.cost_usd, rec.model_calls, rec.model_s = u.cost_usd, u.model_calls, u.model_s
    if tracker is not None:
        rec.retrieval = tracker.finish(rec.final_diff, task.fact_tokens)
    rec.wall_s = time.monotonic() - started
    for k in ("wall_s", "setup_s", "model_s", "tools_s", "grading_s"):
        setattr(rec, k, round(float(getattr(rec, k)), 4))
    # the named remainder, so the parts add up to wall_s
    rec.other_s = round(rec.wall_s - (rec.setup_s + rec.model_s + rec.tools_s + rec.grading_s), 4)
    if keep_workspace and work is not None:
        rec.workspace = str(work)
    traj.log("episode_end", resolved=rec.resolved, interventions=rec.interventions, stop_reason=rec.stop_reason, error=rec.error)
    return rec
