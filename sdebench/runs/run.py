"""`python -m sdebench.run`: run every selected task under one delivery, agent and model.

    python -m sdebench.run delivery=memtool source=K agent=oracle
    python -m sdebench.run -m delivery=full,squashed,memtool,inject,oracle source=H,K,F,X,none

One run = one job: every task of `tasks_dir` matching `source` and `select.*`, one episode each.
A finished episode (its record exists under `results_dir`) is skipped unless `rerun=true`; one
that ended in an error runs again unless `retry_errors=false`. An
exception inside an episode is recorded as a failed episode; only bad input for the whole run
(no tasks dir, unknown sandbox backend) stops it, with a one-line error.

Nothing heavy is imported at module top: a single noop run should start and finish fast.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from sdebench.runs.config import CONF_DIR

log = logging.getLogger("sdebench.run")


class RunError(Exception):
    """Bad input for a whole run; reported as one line."""


def select_tasks(cfg: dict[str, Any]) -> list:
    """The tasks of `cfg['tasks_dir']` matching `cfg['source']` and `cfg['select']`; bad task dirs are skipped with a warning."""
    from sdebench.tasks.record import TaskError, discover, load

    sel = dict(cfg.get("select") or {})
    wanted = {
        "source": _as_set((cfg.get("source") or {}).get("name") if isinstance(cfg.get("source"), dict) else cfg.get("source")),
        "family": _as_set(sel.get("family")),
        "variant": _as_set(sel.get("variant")),
        "bottleneck": _as_set(sel.get("bottleneck")),
        "id": _as_set(sel.get("ids")),
    }
    wanted = {k: v for k, v in wanted.items() if v is not None}
    try:
        dirs = discover(cfg.get("tasks_dir") or "tasks")
    except TaskError as e:
        raise RunError(str(e)) from None
    out = []
    for d in dirs:
        try:
            task = load(d)
        except TaskError as e:
            log.warning("skipping task dir: %s", e)
            continue
        if all(str(getattr(task, k)) in v for k, v in wanted.items()):
            out.append(task)
    return out


def _as_set(value) -> set[str] | None:
    """A filter value (None, 'all', 'a,b', a list) as a set of strings; None means any."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple | set):
        items = [str(v) for v in value]
    else:
        items = [str(value)]
    items = {i.strip() for i in items if str(i).strip()}
    return None if not items or "all" in items else items


def run_job(cfg: dict[str, Any], job_dir: Path) -> list[dict[str, Any]]:
    """Run (or skip, if finished) one episode per selected task; return the records."""
    from sdebench.runs import progress, results
    from sdebench.runs.episode import identity, run_episode
    from sdebench.sandbox import SandboxError, make_factory

    tasks = select_tasks(cfg)
    if not tasks:
        log.warning("no task in %s matches source=%s select=%s", cfg.get("tasks_dir"), _source(cfg), cfg.get("select"))
        return []
    from sdebench.grading.options import GradeOptions, OptionError

    try:
        GradeOptions.from_mapping(dict(cfg.get("grading") or {}))
    except (OptionError, TypeError) as e:
        raise RunError(f"grading: {e}") from None
    try:
        factory = make_factory(dict(cfg.get("sandbox") or {}))
    except (SandboxError, TypeError, ValueError) as e:
        raise RunError(f"sandbox: {e}") from None
    # A bad model config (unpriced model, missing key variable) is one error at start-up, not a
    # failed record per episode; reference agents (model none) report their faults per episode.
    if (cfg.get("model") or {}).get("name", "none") != "none":
        from sdebench.agents import make_agent

        try:
            make_agent(cfg)
        except ValueError as e:
            factory.cleanup()
            raise RunError(f"agent: {e}") from None
    results_dir = Path(cfg.get("results_dir") or "results")
    cfg_hash = results.config_hash(cfg)
    records = progress.tracker(cfg, len(tasks), job_dir)
    try:
        for n, task in enumerate(tasks, 1):
            ident = identity(task, cfg)
            task_hash = task.content_hash()
            key = results.episode_key(task_hash, ident["delivery"], ident["agent"], ident["model"], ident["seed"], cfg_hash)
            path = results.record_path(results_dir, ident, key)
            head = f"[{n}/{len(tasks)}] {task.id} delivery={ident['delivery']} agent={ident['agent']} model={ident['model']}"
            done = None if cfg.get("rerun") else results.read_record(path)
            if done is not None and done.get("stop_reason") == "error" and cfg.get("retry_errors", True):
                log.info("%s: last attempt failed with an error (%s), running it again", head, done.get("error"))
                done = None
            if done is not None:
                log.info("%s: already done (%s), skipped", head, _outcome(done))
                records.append(done)
                results.append_manifest(job_dir, path)
                continue
            results.clean_stale(path)
            traj = results.trajectory_path(path)
            rec = run_episode(task, cfg, factory, trajectory_path=traj, keep_workspace=bool(cfg.get("keep_workspace")))
            rec.update(task_hash=task_hash, config_hash=cfg_hash, key=key, trajectory=str(traj.resolve()))
            results.write_record(path, rec)
            results.append_manifest(job_dir, path)
            records.append(rec)
            log.info("%s: %s", head, _outcome(rec))
    finally:
        factory.cleanup()
    return records


def _source(cfg: dict[str, Any]) -> str:
    s = cfg.get("source")
    return str(s.get("name") if isinstance(s, dict) else s)


def _outcome(rec: dict[str, Any]) -> str:
    state = "resolved" if rec.get("resolved") else f"unresolved ({rec.get('stop_reason')})"
    err = f", error: {rec['error']}" if rec.get("error") else ""
    return f"{state}, {rec.get('interventions')} interventions, {rec.get('wall_s', 0):.2f}s{err}"


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    """Hydra entry point: one job over the selected tasks; single runs print the summary table."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from sdebench.runs import results

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
        return
    if hc.mode == RunMode.RUN:
        print("\n" + results.markdown(results.summarize(records)), flush=True)
        errors = sum(r.get("stop_reason") == "error" for r in records)
        if errors:
            # An error is not an outcome: say so, and exit non-zero (a rerun retries them).
            print(f"sdebench.run: {errors} episode(s) failed with an error (rerun to retry them)", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
