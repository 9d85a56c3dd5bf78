"""`python -m sdebench.run`: run every selected task under one delivery, agent and model.

    python -m sdebench.run delivery=memtool source=K agent=oracle
    python -m sdebench.run -m delivery=full,squashed,memtool,inject,oracle source=H,K,F,X,none
    python -m sdebench.run -m experiment=reference_matrix dry_run=true

One run = one job: every task of `tasks_dir` matching `source` and `select.*`, one episode each.
A finished episode (its record exists under `results_dir`) is skipped unless `rerun=true`; one
that ended in an error runs again unless `retry_errors=false` (`run_or_reuse`, shared with
`sdebench.stream`). An exception inside an episode is recorded as a failed episode; only bad
input for the whole run (no tasks dir, an unknown source, agent, delivery or sandbox) stops it,
with a one-line error. With `dry_run=true` a job selects its tasks, builds every component, prints
the episodes it would run and exits 0 without running them. With `--plan` (or `plan=true`, or
`sdebench plan ...`) the run or sweep is only planned: episodes per cell, worst-case and estimated
cost (sdebench.runs.plan). Before the first episode a job runs its pre-flight checks
(sdebench.runs.preflight); with `budget_usd` every episode first reserves its cap in the sweep's
ledger (sdebench.runs.budget).

Nothing heavy is imported at module top: a single noop run should start and finish fast.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from sdebench.runs.config import CONF_DIR, section, settings
from sdebench.runs.jobs import RunError, filter_text, outcome, select_tasks
from sdebench.runs.plan import episode_lines
from sdebench.runs.record import StreamPosition
from sdebench.runs.schema import RunConfig

log = logging.getLogger("sdebench.run")


def uses_model(conf: RunConfig) -> bool:
    """Whether `conf` chooses a model (`model=none`: the reference agents' runs)."""
    return section(conf.model).get("name", "none") != "none"


def start_up(conf: RunConfig, build_agent: bool, check: bool = False) -> Any:
    """Check the agent, delivery and sandbox `conf` names and return the sandbox factory; a bad one is a RunError.

    With `check` the pre-flight checks run too (sdebench.runs.preflight: the model endpoint answers
    one 1-token call, the sandbox runs `echo ok`); an agent that calls a model with `model=none`
    is refused always.

    With `build_agent` the agent is also built from the config (an LLM agent checks its model,
    price and key variable); otherwise only its class is looked up, and a reference agent's own
    faults (e.g. agent=patch without a patch file) are recorded per episode.
    """
    from sdebench import components
    from sdebench.components import ComponentError
    from sdebench.grading.options import GradeOptions, OptionError
    from sdebench.sandbox import SandboxError

    try:
        GradeOptions.from_mapping(dataclasses.asdict(conf.grading))
    except (OptionError, TypeError) as e:
        raise RunError(f"grading: {e}") from None
    from sdebench.runs import preflight

    try:
        agent_cls = components.resolve("agent", section(conf.agent).get("name"))
        components.build_delivery(conf.delivery)
        preflight.check_config(conf, agent_cls)
    except (ComponentError, preflight.PreflightError) as e:
        raise RunError(str(e)) from None
    try:
        factory = components.build_sandbox(conf.sandbox)
    except (SandboxError, TypeError, ValueError) as e:
        raise RunError(f"sandbox: {e}") from None
    if uses_model(conf):
        # litellm takes 10-40 s to import cold: import it now, before any episode's clock starts
        from sdebench.agents.accounting import import_litellm

        import_litellm()
    if build_agent:
        try:
            components.build_agent(conf.agent, conf.model)
        except ValueError as e:
            factory.cleanup()
            raise RunError(f"agent: {e}") from None
    if check:
        try:
            preflight.run(conf, factory)
        except preflight.PreflightError as e:
            factory.cleanup()
            raise RunError(f"pre-flight: {e}") from None
    return factory


def run_or_reuse(task, cfg: RunConfig | dict[str, Any], factory, results_dir: Path, *, key_extra: str = "", carried=None,
                 stream: dict[str, Any] | None = None, manifest: Path | None = None, head: str = "", ledger=None,
                 wait: bool = True):
    """The record of one episode: reused if it exists under `results_dir`, else run and written atomically.

    `rerun=true` runs it anyway; a record that ended in an error runs again unless
    `retry_errors=false`. The key covers the task's content hash, identity, outcome-relevant
    config and `key_extra` (a stream adds its position and carried memory). `stream` fields are
    set on a fresh record; `manifest` (a job dir) lists the record's path. With a budget `ledger`
    (sdebench.runs.budget) an episode to run first reserves its worst case; BudgetSpent if refused.
    Another process holding the episode's claim (`claims`: flock or lease) is waited for, or with
    `wait=False` the answer is None.
    """
    from sdebench.runs import results, sweep
    from sdebench.runs.episode import identity

    conf = settings(cfg)
    ident = identity(task, conf)
    task_hash = task.content_hash()
    cfg_hash = results.config_hash(conf)
    key = results.episode_key(task_hash, ident.delivery, ident.agent, ident.model, ident.seed, cfg_hash + key_extra)
    path = results.record_path(results_dir, ident, key)
    claimed = Claimed(task, conf, factory, path, task_hash, cfg_hash, key, head or task.id, carried=carried,
                      stream=stream, manifest=manifest, ledger=ledger)
    mode = sweep.ClaimMode.of(conf.claims, conf.claim_lease_s)
    if wait:
        with sweep.claim(path, on_wait=lambda: log.info("%s: another process is running it, waiting", claimed.head),
                         mode=mode):
            return _run_claimed(claimed)
    handle = sweep.try_claim(path, mode)
    if handle is None:
        log.info("%s: another process is running it, taking the next one", claimed.head)
        return None
    try:
        return _run_claimed(claimed)
    finally:
        sweep.release(handle)


@dataclass(frozen=True)
class Claimed:
    """One episode whose claim this process holds: what runs, where its record goes, what keys it."""

    task: Any
    conf: RunConfig
    factory: Any
    path: Path  # the record's path under the results dir
    task_hash: str
    cfg_hash: str
    key: str
    head: str  # how log lines name the episode
    carried: Any = None  # a stream's carried memory (sdebench.delivery.carried.CarriedMemory)
    stream: dict[str, Any] | None = None  # stream fields set on a fresh record
    manifest: Path | None = None  # a job dir whose manifest lists the record
    ledger: Any = None  # the sweep's budget ledger (sdebench.runs.budget.Ledger)


def _run_claimed(c: Claimed):
    """`run_or_reuse` once this process holds the episode's claim."""
    from sdebench.runs import results, sweep
    from sdebench.runs.assemble import run_episode

    done = None if c.conf.rerun else results.read_record(c.path)
    if done is not None and done.outcome.stop_reason == "error" and c.conf.retry_errors:
        log.info("%s: last attempt failed with an error (%s), running it again", c.head, done.outcome.error)
        done = None
    if done is not None:
        log.info("%s: already done (%s), skipped", c.head, outcome(done))
        rec = done
    else:
        token = None
        if c.ledger is not None:
            from sdebench.runs.budget import episode_worst_case

            token = c.ledger.reserve(episode_worst_case(c.conf), c.head)  # BudgetSpent: not started
        results.clean_stale(c.path)
        traj = results.trajectory_path(c.path)
        rec = None
        try:
            rec = run_episode(c.task, c.conf, c.factory, trajectory_path=traj, keep_workspace=c.conf.keep_workspace,
                              carried=c.carried)
        finally:
            if token is not None and rec is not None:
                c.ledger.settle(token, rec.usage.cost_usd)  # no record (interrupted): the reservation stays, on the safe side
        st = rec.storage
        st.task_hash, st.config_hash, st.key, st.trajectory = c.task_hash, c.cfg_hash, c.key, str(traj.resolve())
        if c.stream:
            rec.stream = StreamPosition(**c.stream)
        results.write_record(c.path, rec)
        log.info("%s: %s", c.head, outcome(rec))
    if rec.outcome.stop_reason == "error":
        sweep.report("episode_error", f"{c.task.id}: {rec.outcome.error}")
    if c.manifest is not None:
        results.append_manifest(c.manifest, c.path)
    return rec


def budget_ledger(conf: RunConfig):
    """The sweep's budget ledger (None without `budget_usd`); a negative budget is a RunError."""
    from sdebench.runs.budget import Ledger

    try:
        ledger = Ledger.for_run(conf)
    except ValueError as e:
        raise RunError(str(e)) from None
    return ledger


def run_job(cfg: RunConfig | dict[str, Any], job_dir: Path) -> list:
    """Run (or skip, if finished) one episode per selected task; return the records (none for a dry run)."""
    from sdebench.runs import pool, progress, provenance, sweep
    from sdebench.runs.budget import BudgetSpent
    from sdebench.runs.config import ConfigError

    try:
        conf = settings(cfg)
        concurrency = pool.concurrency_of(conf.concurrency)
    except (ConfigError, ValueError) as e:
        raise RunError(str(e)) from None
    sweep.die_with_sweep()
    tasks = select_tasks(conf)
    if not tasks:
        msg = f"no task in {conf.tasks_dir} matches {filter_text(conf)}"
        log.warning("%s", msg)
        sweep.report("no_match", msg)
        return []
    dry = conf.dry_run or conf.plan  # plan=true never runs an episode
    # A model config is checked once at start-up; reference agents (model none) report their own
    # faults per episode, unless this is a dry run, which builds everything it would use.
    ledger = budget_ledger(conf)
    factory = start_up(conf, build_agent=dry or uses_model(conf), check=not dry)
    results_dir = Path(conf.results_dir or "results")
    try:
        if dry:
            lines = episode_lines(tasks, conf, factory)
            print("dry run, nothing is run:\n" + "\n".join(lines), flush=True)
            return []
        # which command, commit and config produced the records (read by the report)
        provenance.note_job(conf, results_dir)
        records = progress.tracker(conf, len(tasks), job_dir)

        def attempt(item: tuple[int, Any], wait: bool) -> bool:
            n, task = item
            head = (f"[{n}/{len(tasks)}] {task.id} delivery={section(conf.delivery).get('name')} "
                    f"agent={section(conf.agent).get('name')} model={section(conf.model).get('name', 'none')}")
            try:
                rec = run_or_reuse(task, conf, factory, results_dir, manifest=job_dir, head=head, ledger=ledger,
                                   wait=wait)
            except BudgetSpent as e:
                log.warning("not started, budget: %s", e)
                sweep.report("budget", f"budget_usd={ledger.budget_usd:g}")
                return True
            if rec is None:
                return False  # another process runs it: come back to it at the end
            records.append(rec)
            return True

        pool.run_all(list(enumerate(tasks, 1)), attempt, concurrency)
    finally:
        factory.cleanup()
    return records


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def app(cfg: DictConfig) -> None:
    """Hydra entry point: one job over the selected tasks; single runs print the summary table."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from sdebench.runs import results, sweep

    plain = OmegaConf.to_container(cfg, resolve=True)
    hc = HydraConfig.get()
    try:
        records = run_job(plain, Path(hc.runtime.output_dir))
    except Exception as e:  # noqa: BLE001 - one line, and a sweep goes on with its other jobs
        msg = str(e) if isinstance(e, RunError) else f"{type(e).__name__}: {e}"
        print(f"sdebench.run: error: {msg}", file=sys.stderr, flush=True)
        if hc.mode == RunMode.RUN:
            sys.exit(2)
        log.error("job failed: %s", msg)
        sweep.report("job_failed", f"{hc.job.override_dirname or hc.job.name}: {msg}")
        return
    if hc.mode == RunMode.RUN and not cfg.dry_run:
        print("\n" + results.markdown(results.summarize(records)), flush=True)
    # An error is not an outcome: errored episodes are reported through sweep.report and make the
    # exit status 1 (sdebench.runs.sweep.cli), in single runs and sweeps alike.


def main(argv: list[str] | None = None) -> None:
    """`sdebench run [-m] OVERRIDE...`: the Hydra app behind checked overrides; exits non-zero on any problem."""
    from sdebench.runs import sweep

    args = list(sys.argv[1:] if argv is None else argv)
    if "--plan" in args or any(a.lower() == "plan=true" for a in args):
        from sdebench.runs import plan

        sys.exit(plan.main(args, prog="sdebench run --plan"))
    sys.exit(sweep.cli(app, "sdebench run", CONF_DIR, "config", args))


if __name__ == "__main__":
    main()
