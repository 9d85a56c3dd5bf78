"""Assembling one episode before its loop runs: every component resolved once and checked.

`build(task, cfg, factory, ...)` reads the run config (limits, the interventions cap, the grade
options as one typed `GradeOptions`), prepares the delivery's workspace under a temporary dir
whose name does not name the task, builds the agent and checks what its `Capabilities` declare
(the answer key, the sandbox it runs in, the mounts and address space that sandbox needs), opens
the sandbox, the toolbox and the retrieval tracker, and resolves the task's grader. It returns an
`Episode` (sdebench.runs.episode) whose `run()` is the loop. It never raises: a failure is
recorded as the episode's error, and `run()` then only releases what was opened and ends the record.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from sdebench.agents.base import (
    Agent,
    AgentContext,
    AnswerKey,
    Capabilities,
    CapabilityError,
    Limits,
    SandboxAgent,
    capabilities_of,
)
from sdebench.agents.trajectory import Trajectory, TrajectoryView
from sdebench.delivery.carried import CarriedMemory
from sdebench.grading.options import GradeOptions
from sdebench.runs.config import settings
from sdebench.runs.episode import Episode, Grader, Grading, identity
from sdebench.runs.record import DeliveryReport, EpisodeRecord
from sdebench.runs.schema import RunConfig
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks.record import Task

AGENT_MEMBERS = ("name", "usage", "capabilities", "start", "run", "feedback", "close")
SANDBOX_AGENT_MEMBERS = ("sandbox_mounts", "tool_calls")  # sdebench.agents.base.SandboxAgent


def limits_from(conf: RunConfig) -> Limits:
    """The per-episode Limits of `conf.limits`."""
    lim = conf.limits
    return Limits(max_turns=lim.max_turns, max_cost_usd=lim.max_cost_usd, max_wall_s=lim.max_wall_s)


def checked_agent(agent: Any) -> Capabilities:
    """The capabilities of a built agent, once it is checked to offer what they imply; CapabilityError if not."""
    caps = capabilities_of(agent)
    missing = [m for m in AGENT_MEMBERS if m not in dir(agent)]
    if caps.runs_in_sandbox:
        missing += [m for m in SANDBOX_AGENT_MEMBERS if m not in dir(agent)]
    if missing:
        raise CapabilityError(f"agent {type(agent).__name__} lacks {', '.join(missing)} (sdebench.agents.base.Agent)")
    return caps


def _tracker(task: Task, prepared: Any, partial: bool, traj: Trajectory) -> Any:
    """The host-side retrieval tracker of an episode (sdebench.runs.retrieval), or None if it cannot be built."""
    from sdebench.delivery.decisive import decisive_items
    from sdebench.runs.retrieval import RetrievalTracker as Tracker

    try:
        return Tracker(decisive_items(task), workspace=prepared.workspace, memory=prepared.memory,
                       injected_ids=prepared.injected, partial=partial)
    except Exception as e:  # noqa: BLE001 - diagnostics never cost the episode its record
        traj.log("error", error=f"retrieval diagnostics unavailable: {type(e).__name__}: {e}")
        return None


def _record(task: Task, conf: RunConfig, trajectory_path: Path | None) -> tuple[EpisodeRecord, Trajectory]:
    """The episode's empty record and its trajectory (one that cannot be written is noted, not fatal)."""
    rec = EpisodeRecord.start(identity(task, conf))
    rec.outcome.feedback_hidden = str(conf.grading.feedback_hidden)
    try:
        return rec, Trajectory(trajectory_path)
    except OSError as e:
        rec.outcome.error = f"trajectory not writable: {e}"
        return rec, Trajectory(None)


def build(
    task: Task,
    cfg: RunConfig | dict[str, Any],
    factory: SandboxFactory,
    *,
    trajectory_path: Path | None = None,
    work_root: Path | None = None,
    grader: Grader | None = None,
    agent: Agent | None = None,
    keep_workspace: bool = False,
    carried: CarriedMemory | None = None,
) -> Episode:
    """Assemble one episode of `task` under `cfg` (the run config, typed or as a mapping); never raises (see the module
    doc) but for a mapping that is no run config (ConfigError).

    `carried` is memory earned on earlier tasks of a stream; the delivery mode applies it.
    `grader` replaces the task's own grader (tests); `agent` the one `cfg` names.
    """
    from sdebench.agents.tools import Toolbox
    from sdebench.components import build_agent, build_delivery, grader_for

    started = time.monotonic()
    conf = settings(cfg)  # a bad mapping raises here: the caller's input, not an episode's failure
    rec, traj = _record(task, conf, trajectory_path)
    ep = Episode(task, rec, traj, started, keep_workspace)
    try:
        ep.max_interventions = conf.max_interventions
        rec.outcome.max_interventions = ep.max_interventions  # the cap, so analyses count unresolved episodes at it
        limits = limits_from(conf)
        ep.max_wall_s = limits.max_wall_s
        if work_root is not None:
            Path(work_root).mkdir(parents=True, exist_ok=True)
        options = GradeOptions.from_mapping(dataclasses.asdict(conf.grading))
        # A neutral name: the workspace path must not name the task (unsafe_local shows it as is).
        work = ep.work = Path(tempfile.mkdtemp(prefix="ep-", dir=work_root))
        traj.log("episode_start", **vars(rec.identity), max_interventions=ep.max_interventions)
        prepared = ep.prepared = build_delivery(conf.delivery, conf.memory).prepare(task, work, carried)
        rec.delivery = DeliveryReport.of(prepared.info)
        chosen = agent if agent is not None else build_agent(conf.agent, conf.model)
        caps = checked_agent(chosen)  # before the episode holds it: an unchecked agent is never closed
        ep.agent = chosen
        ep.tracker = _tracker(task, prepared, caps.runs_in_sandbox, traj)
        # An agent that runs its own program in the sandbox (an installed CLI) names what to bind into it;
        # a runtime that reserves more address space than it uses (Bun) asks for a higher cap.
        runs_there = caps.runs_in_sandbox and isinstance(ep.agent, SandboxAgent)
        mounts = tuple(ep.agent.sandbox_mounts(work)) if runs_there else ()
        opts = {**({"mounts": mounts} if mounts else {}),
                **({"address_space_mb": caps.address_space_mb} if caps.address_space_mb else {})}
        sandbox = ep.sandbox = factory.open(prepared.workspace, **opts)
        visible = (*task.tests.fail_to_pass, *task.tests.pass_to_pass)
        ep.toolbox = Toolbox(sandbox, prepared.tools, prepared.memory, traj, visible_tests=visible, observer=ep.tracker,
                             **dataclasses.asdict(conf.tools))
        grade_fn = grader if grader is not None else grader_for(task)
        rec.timing.setup_s = time.monotonic() - started
        ep.ctx = AgentContext(
            statement=task.statement,
            prompt_additions=prepared.prompt_additions,
            toolbox=ep.toolbox.view(),
            trajectory=TrajectoryView(traj),
            limits=limits,
            seed=rec.identity.seed,
            started_at=started,
            answer_key=AnswerKey.of(task) if caps.needs_answer_key else None,
            # Only an agent that runs its own program there (an installed CLI) holds the sandbox itself.
            sandbox=sandbox if caps.runs_in_sandbox else None,
        )
        ep.grading = Grading(task, sandbox, prepared.workspace, work, factory, grade_fn,
                             conf.reuse_unchanged_grades, options)
    except Exception as e:  # noqa: BLE001 - an episode failure is a record, never a crash of the sweep
        ep.failed = True
        ep.fail(e)
    except BaseException:
        ep.release()  # interrupted while assembling: leave no sandbox or workspace behind
        raise
    return ep


def run_episode(
    task: Task,
    cfg: RunConfig | dict[str, Any],
    factory: SandboxFactory,
    *,
    trajectory_path: Path | None = None,
    work_root: Path | None = None,
    grader: Grader | None = None,
    agent: Agent | None = None,
    keep_workspace: bool = False,
    carried: CarriedMemory | None = None,
) -> EpisodeRecord:
    """Run one episode of `task` under `cfg` (the run config, typed or as a mapping) and return its record;
    never raises but for a mapping that is no run config (ConfigError).

    `carried` is memory earned on earlier tasks of a stream; the delivery mode applies it.
    `grader` replaces the task's own grader (tests); `agent` the one `cfg` names.
    """
    return build(task, cfg, factory, trajectory_path=trajectory_path, work_root=work_root, grader=grader,
                 agent=agent, keep_workspace=keep_workspace, carried=carried).run()
