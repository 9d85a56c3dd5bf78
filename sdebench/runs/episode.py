"""One episode's loop: run the agent until submit or a limit, grade, feed the failing output back
and resume (at most `max_interventions` times), with metrics and trajectory.

The episode is first assembled (sdebench.runs.assemble.build: delivery, agent, sandbox, toolbox,
grade options, limits, each checked); `Episode.run` is then only the loop and the accounting.

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
the delivery's prompt additions, a view of the toolbox and of the trajectory. Only an agent whose
capabilities need it (the reference agents) also gets the answer key. The workspace lives under a
temporary dir whose name does not name the task. The task's grader is looked up by its `grader`
field (sdebench.components). The episode returns a typed EpisodeRecord.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdebench.agents.base import STOP_ERROR, STOP_SUBMITTED, Agent, AgentContext, SandboxAgent
from sdebench.agents.trajectory import Trajectory
from sdebench.components import memory_system_of
from sdebench.grading.grade import Grade
from sdebench.grading.options import GradeOptions
from sdebench.runs.config import section
from sdebench.runs.record import Attempt, EpisodeRecord, Identity
from sdebench.runs.schema import RunConfig
from sdebench.sandbox.base import Sandbox, SandboxFactory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

Grader = Callable[..., Grade]


def _name(part: Any) -> str:
    return str(section(part).get("name", "none"))


def identity(task: Task, conf: RunConfig) -> Identity:
    """The fields naming an episode: task metadata, delivery, agent, model, seed and task set."""
    return Identity(
        task_id=task.id,
        family=task.family,
        variant=task.variant,
        source=task.source,
        bottleneck=task.bottleneck,
        delivery=_name(conf.delivery),
        agent=_name(conf.agent),
        model=_name(conf.model),
        seed=conf.seed,
        competency=task.competency,
        set_digest=task.set_digest,  # results on a private set stay told apart from the published one
        memory_scale=task.memory_scale,  # and results at another memory scale from the default one
        memory=memory_system_of(conf.delivery, conf.memory),
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


class Grading:
    """Grades the agent's files after each run; an unchanged submission reuses the last grade."""

    def __init__(self, task: Task, sandbox: Sandbox, workspace: Path, work: Path, factory: SandboxFactory,
                 grader: Grader, cache: bool, options: GradeOptions):
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
        g = self.grader(self.task, host, self.factory, options=self.options)
        self.last = (fp, g)
        return g, False


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


class Episode:
    """One assembled episode (sdebench.runs.assemble.build sets its parts); `run()` runs it once.

    A part left None was not reached: assembly failed before it (the record says why, `failed`).
    """

    def __init__(self, task: Task, rec: EpisodeRecord, traj: Trajectory, started: float, keep_workspace: bool):
        self.task, self.rec, self.traj, self.started, self.keep_workspace = task, rec, traj, started, keep_workspace
        self.failed = False  # assembly failed: run() only releases what was opened and ends the record
        self.max_interventions = 0
        self.max_wall_s = 0.0
        self.work: Path | None = None  # the episode's temporary dir (workspace, graded copies)
        self.agent: Agent | None = None
        self.ctx: AgentContext | None = None
        self.sandbox: Sandbox | None = None
        self.toolbox: Any = None  # sdebench.agents.tools.Toolbox (its stats go into the record)
        self.grading: Grading | None = None
        self.tracker: Any = None  # sdebench.runs.retrieval.Tracker, or None
        self.prepared: Any = None  # what the delivery prepared (its memory system is closed with the episode)

    def run(self) -> EpisodeRecord:
        """Start the agent, then run, grade and feed back until resolved, a stop or the cap; never raises."""
        rec, traj = self.rec, self.traj
        out = rec.outcome
        try:
            if not self.failed:
                assert self.agent is not None and self.ctx is not None and self.grading is not None
                self.agent.start(self.ctx)
                while True:
                    run = self.agent.run()
                    rec.usage.turns += run.turns
                    traj.log("run_end", stop_reason=run.stop_reason, turns=run.turns, error=run.error, extra=run.extra)
                    n, t = len(rec.attempts) + 1, time.monotonic()
                    g, reused = self.grading(n)
                    grade_s = time.monotonic() - t
                    rec.timing.grading_s += grade_s
                    rec.attempts.append(_attempt(n, run.stop_reason, run.turns, g, grade_s, reused))
                    traj.log("grade", **g.public())
                    if g.error:
                        # The grade could not run: an infrastructure failure, never an outcome.
                        out.stop_reason, out.error = "error", f"grading failed: {g.error}"
                        break
                    if run.stop_reason == STOP_ERROR:
                        # The run ended in error (a dead model, a broken set-up): no outcome, whatever was graded.
                        out.stop_reason, out.error = STOP_ERROR, run.error or "the agent's run ended in an error"
                        break
                    if g.resolved:
                        out.resolved, out.stop_reason, out.resolved_at = True, "resolved", n
                        break
                    if run.stop_reason != STOP_SUBMITTED:
                        out.stop_reason = run.stop_reason
                        out.error = run.error or out.error
                        break
                    if time.monotonic() - self.started > self.max_wall_s:
                        out.stop_reason = "max_wall"
                        break
                    if out.interventions >= self.max_interventions:
                        out.stop_reason = "max_interventions"
                        break
                    out.interventions += 1
                    traj.log("feedback", intervention=out.interventions, text=g.feedback)
                    out.feedback.append(g.feedback)
                    self.agent.feedback(g.feedback)
                out.final_diff = repo_mod.worktree_diff(self.grading.graded)
        except Exception as e:  # noqa: BLE001 - an episode failure is a record, never a crash of the sweep
            self.fail(e)
        finally:
            self.release()
        return self.account()

    def fail(self, e: Exception) -> None:
        """Record `e` as the episode's error (no outcome), with its traceback in the trajectory."""
        out = self.rec.outcome
        out.resolved, out.stop_reason, out.error = False, "error", f"{type(e).__name__}: {e}"
        self.traj.log("error", error=out.error, traceback=traceback.format_exc())

    def release(self) -> None:
        """Close the agent and the sandbox and remove the episode's dir (unless kept); a failure here is only logged."""
        memory = self.prepared.memory if self.prepared is not None else None
        for what, close in (("agent", self.agent), ("sandbox", self.sandbox), ("memory system", memory)):
            if close is not None:
                try:
                    close.close()
                except Exception as e:  # noqa: BLE001 - closing must not lose the record
                    self.traj.log("error", error=f"{what} close failed: {type(e).__name__}: {e}")
        if self.work is not None and not self.keep_workspace:
            shutil.rmtree(self.work, ignore_errors=True)

    def account(self) -> EpisodeRecord:
        """The record completed with the tools', the model's and the retrieval figures and the time parts."""
        rec = self.rec
        if self.toolbox is not None:
            # an agent that runs its own program (an installed CLI) counts the tools it called itself
            own = self.agent.tool_calls() if isinstance(self.agent, SandboxAgent) else {}
            rec.count_tools(self.toolbox.stats(), own)
            if self.toolbox.written:
                rec.delivery.memory_written = list(self.toolbox.written)
            if self.toolbox.memory_failures:
                rec.delivery.memory_failures = list(self.toolbox.memory_failures)
        if self.agent is not None:
            rec.count_usage(self.agent.usage)
        if self.tracker is not None:
            rec.retrieval = self.tracker.finish(rec.outcome.final_diff, self.task.fact_tokens)
        rec.close_times(time.monotonic() - self.started)
        if self.keep_workspace and self.work is not None:
            rec.storage.workspace = str(self.work)
        out = rec.outcome
        self.traj.log("episode_end", resolved=out.resolved, interventions=out.interventions,
                      stop_reason=out.stop_reason, error=out.error)
        return rec
