"""One episode: prepare the delivery, run the agent until submit or a limit, grade, feed the
failing output back and resume (at most `max_interventions` times), with metrics and trajectory.

`interventions` counts failing grades that were fed back (DESIGN.md, 'Interventions'): resolved
at the first submit gives 0; unresolved after the cap gives the cap with resolved=false.

The episode's stop_reason says why it ended: `resolved`, `max_interventions` (unresolved after
the cap), a limit the agent hit (`max_turns`, `max_cost`, `max_wall`, ...), `gave_up`, or `error`
(an exception anywhere in the episode: it is recorded, never raised).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdebench import repo as repo_mod
from sdebench.agents.base import STOP_SUBMITTED, Agent, AgentContext, Limits
from sdebench.carried import CarriedMemory
from sdebench.grade import Grade
from sdebench.sandbox.base import SandboxFactory
from sdebench.task import Task
from sdebench.trajectory import Trajectory

Grader = Callable[..., Grade]
DEFAULT_MAX_INTERVENTIONS = 5


def limits_from(cfg: dict[str, Any]) -> Limits:
    """The Limits of `cfg['limits']` (missing keys keep their defaults)."""
    raw = dict(cfg.get("limits") or {})
    known = {k: raw[k] for k in ("max_turns", "max_cost_usd", "max_wall_s") if raw.get(k) is not None}
    return Limits(**known)


def _name(cfg: dict[str, Any], key: str, default: str = "none") -> str:
    value = cfg.get(key)
    if isinstance(value, dict):
        return str(value.get("name", default))
    return str(value) if value is not None else default


def identity(task: Task, cfg: dict[str, Any]) -> dict[str, Any]:
    """The fields naming an episode: task metadata, delivery, agent, model and seed."""
    return {
        "task_id": task.id,
        "family": task.family,
        "variant": task.variant,
        "source": task.source,
        "bottleneck": task.bottleneck,
        "delivery": _name(cfg, "delivery"),
        "agent": _name(cfg, "agent"),
        "model": _name(cfg, "model"),
        "seed": int(cfg.get("seed") or 0),
    }


def _grade(
    task: Task, sandbox, workspace: Path, work: Path, n: int, factory: SandboxFactory, grader: Grader
) -> tuple[Grade, Path]:
    """Grade the agent's files; returns the grade and the host dir that was graded.

    A host-local sandbox (its workdir is the host workspace) is graded in place: the grader makes
    its own pristine copy. Otherwise the files are first copied out of the sandbox.
    """
    if Path(sandbox.workdir) == workspace.resolve():
        return grader(task, workspace, factory), workspace
    host = work / f"graded-{n}"
    if host.exists():
        shutil.rmtree(host)
    sandbox.sync_out(host)
    return grader(task, host, factory), host


def _attempt(n: int, run_stop: str, turns: int, g: Grade, grade_s: float) -> dict[str, Any]:
    return {
        "attempt": n,
        "stop_reason": run_stop,
        "turns": turns,
        "resolved": bool(g.resolved),
        "counts": g.counts,
        "pass_ratio": g.pass_ratio,
        "guards": list(g.guards),
        "grade_error": g.error,
        "grade_s": round(grade_s, 4),
    }


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
) -> dict[str, Any]:
    """Run one episode of `task` under `cfg` (the whole resolved config) and return its record; never raises.

    `carried` is memory earned on earlier tasks of a stream; the delivery mode applies it.
    """
    from sdebench.agents import make_agent
    from sdebench.delivery import make_delivery
    from sdebench.tools import Toolbox

    if grader is None:
        from sdebench.grade import grade as grader

    started = time.monotonic()
    rec: dict[str, Any] = {
        **identity(task, cfg),
        "resolved": False,
        "interventions": 0,
        "attempts": [],
        "turns": 0,
        "tool_calls": {},
        "tool_errors": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": 0,
        "cost_usd": 0.0,
        "model_calls": 0,
        "wall_s": 0.0,
        "setup_s": 0.0,
        "model_s": 0.0,
        "tools_s": 0.0,
        "grading_s": 0.0,
        "final_diff": "",
        "stop_reason": "error",
        "error": None,
        "delivery_info": {},
        "feedback": [],  # the texts fed back, in order (a stream turns them into carried corrections)
    }
    try:
        traj = Trajectory(trajectory_path)
    except OSError as e:
        traj = Trajectory(None)
        rec["error"] = f"trajectory not writable: {e}"
    max_interventions = int(cfg.get("max_interventions", DEFAULT_MAX_INTERVENTIONS))
    rec["max_interventions"] = max_interventions  # the cap, so analyses count unresolved episodes at it
    limits = limits_from(cfg)
    work: Path | None = None
    sandbox = toolbox = agent_obj = None
    last_graded: Path | None = None
    try:
        if work_root is not None:
            Path(work_root).mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"sdebench-{task.id}-", dir=work_root))
        traj.log("episode_start", **identity(task, cfg), max_interventions=max_interventions)
        prepared = make_delivery(cfg.get("delivery") or {}).prepare(task, work, carried)
        rec["delivery_info"] = prepared.info
        sandbox = factory.open(prepared.workspace)
        tool_opts = dict(cfg.get("tools") or {})
        toolbox = Toolbox(
            sandbox, task, prepared.tools, prepared.memory, traj, default_k=prepared.info.get("default_k", 5), **tool_opts
        )
        agent_obj = agent if agent is not None else make_agent(cfg)
        rec["setup_s"] = time.monotonic() - started
        ctx = AgentContext(
            task=task,
            statement=task.statement,
            prompt_additions=prepared.prompt_additions,
            toolbox=toolbox,
            trajectory=traj,
            limits=limits,
            seed=rec["seed"],
            started_at=started,
        )
        agent_obj.start(ctx)
        interventions = 0
        while True:
            run = agent_obj.run()
            rec["turns"] += run.turns
            traj.log("run_end", stop_reason=run.stop_reason, turns=run.turns, error=run.error, extra=run.extra)
            t = time.monotonic()
            g, graded = _grade(task, sandbox, prepared.workspace, work, len(rec["attempts"]) + 1, factory, grader)
            grade_s = time.monotonic() - t
            rec["grading_s"] += grade_s
            if last_graded not in (None, graded, prepared.workspace):
                shutil.rmtree(last_graded, ignore_errors=True)
            last_graded = graded
            rec["attempts"].append(_attempt(len(rec["attempts"]) + 1, run.stop_reason, run.turns, g, grade_s))
            traj.log("grade", **g.to_dict())
            if g.resolved:
                rec["resolved"], rec["stop_reason"] = True, "resolved"
                break
            if run.stop_reason != STOP_SUBMITTED:
                rec["stop_reason"] = run.stop_reason
                if run.error:
                    rec["error"] = run.error
                break
            if time.monotonic() - started > limits.max_wall_s:
                rec["stop_reason"] = "max_wall"
                break
            if interventions >= max_interventions:
                rec["stop_reason"] = "max_interventions"
                break
            interventions += 1
            rec["interventions"] = interventions
            traj.log("feedback", intervention=interventions, text=g.feedback)
            rec["feedback"].append(g.feedback)
            agent_obj.feedback(g.feedback)
        rec["final_diff"] = repo_mod.worktree_diff(last_graded)
    except Exception as e:  # noqa: BLE001 - an episode failure is a record, never a crash of the sweep
        rec["resolved"] = False
        rec["stop_reason"] = "error"
        rec["error"] = f"{type(e).__name__}: {e}"
        traj.log("error", error=rec["error"], traceback=traceback.format_exc())
    finally:
        if sandbox is not None:
            try:
                sandbox.close()
            except Exception as e:  # noqa: BLE001 - closing must not lose the record
                traj.log("error", error=f"sandbox close failed: {type(e).__name__}: {e}")
        if work is not None and not keep_workspace:
            shutil.rmtree(work, ignore_errors=True)
    if toolbox is not None:
        stats = toolbox.stats()
        rec["tool_calls"] = stats["tool_calls"]
        rec["tool_errors"] = stats["tool_errors"]
        rec["tools_s"] = stats["tools_s"]
    if agent_obj is not None:
        u = agent_obj.usage
        rec.update(
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            cached_tokens=u.cached_tokens,
            cost_usd=u.cost_usd,
            model_calls=u.model_calls,
            model_s=u.model_s,
        )
    rec["wall_s"] = time.monotonic() - started
    for k in ("wall_s", "setup_s", "model_s", "tools_s", "grading_s"):
        rec[k] = round(float(rec[k]), 4)
    if keep_workspace and work is not None:
        rec["workspace"] = str(work)
    traj.log("episode_end", resolved=rec["resolved"], interventions=rec["interventions"], stop_reason=rec["stop_reason"], error=rec["error"])
    return rec
