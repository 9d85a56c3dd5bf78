"""`python -m sdebench.stream`: run an ordered stream of tasks, carrying earned memory forward.

    python -m sdebench.stream agent=learner delivery=full stream=rounding stream.carry=both
    python -m sdebench.stream -m agent=learner stream.carry=both,F,X,none

After each episode the memory later tasks receive grows by what the episode earned (see
sdebench.delivery.carried): the feedback the agent was given (F, retained corrections) and, if resolved,
its statement and accepted diff (X, past solves). `stream.carry` picks what is kept: F, X, both,
or none (the control). With `stream.fresh=true` every task is also run fresh (no carried
memory) under the same config, for forward transfer; fresh episodes are keyed exactly as
`python -m sdebench.run` keys them, so either command reuses the other's records (both go through
`sdebench.runs.run.run_or_reuse`: `rerun` and `retry_errors` mean the same in both). With
`dry_run=true` a job orders its tasks, builds every component, prints the positions it would run
and exits 0.

Each job writes `stream.json` (one row per position: outcome, carried memory size, fresh
outcome, transfer), `stream.md` and `learning_curve.png` into its output dir.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from sdebench.errors import RunError
from sdebench.runs import slurm
from sdebench.runs.config import CONF_DIR
from sdebench.runs.rules import outcome_label
from sdebench.runs.schema import RunConfig

slurm.register()  # the resolvers of hydra/launcher=slurm

log = logging.getLogger("sdebench.stream")
STREAM_JSON = "stream.json"


class StreamError(RunError):
    """Bad input for a whole stream; reported as one line."""


@dataclass(frozen=True)
class StreamSpec:
    """One stream: its name, task order, shuffling, what memory it carries, and the fresh baseline."""

    name: str
    tasks: tuple[str, ...]
    shuffle: bool = False
    shuffle_seed: int = 0
    carry: str = "both"
    fresh: bool = True

    @classmethod
    def of(cls, section: Any) -> StreamSpec:
        """The spec a run config's `stream` section gives; a bad value is a StreamError."""
        from sdebench.delivery.carried import CarryError, kinds_for
        from sdebench.tasks.selection import comma_list

        raw = dict(section or {})
        tasks = comma_list(raw.get("tasks")) or ()
        try:
            kinds_for(str(raw.get("carry", "both")))
        except CarryError as e:
            raise StreamError(f"stream.carry: {e}") from None
        return cls(
            name=str(raw.get("name") or "stream"),
            tasks=tuple(str(t) for t in tasks),
            shuffle=bool(raw.get("shuffle", False)),
            shuffle_seed=int(raw.get("shuffle_seed") or 0),
            carry=str(raw.get("carry", "both")),
            fresh=bool(raw.get("fresh", True)),
        )

    def stream_id(self) -> str:
        """The id records carry: name, carry setting and shuffle seed (if shuffled)."""
        return f"{self.name}:{self.carry}" + (f":shuffle{self.shuffle_seed}" if self.shuffle else "")


def order_tasks(spec: StreamSpec, conf: RunConfig) -> list:
    """The stream's tasks in order: `stream.tasks` (else the run selection), shuffled if asked."""
    from sdebench.runs.jobs import RunError, select_tasks
    from sdebench.tasks.record import TaskError
    from sdebench.tasks.selection import select

    if spec.tasks:
        chosen = {k: v for k, v in dataclasses.asdict(conf.select).items() if v is not None}
        if chosen:  # a filter the stream would not apply is refused, not ignored
            raise StreamError(f"stream {spec.name} lists its own tasks (stream.tasks), so select.{next(iter(chosen))} "
                              "would not apply; drop it, or set stream.tasks=null to stream the tasks select.* picks")
        try:
            by_id = {t.id: t for t in select(conf.tasks_dir or "tasks", ids=spec.tasks)}
        except TaskError as e:
            raise StreamError(f"stream task: {e}") from None
        tasks = [by_id[tid] for tid in spec.tasks]
    else:
        try:
            tasks = select_tasks(conf)
        except RunError as e:
            raise StreamError(str(e)) from None
    if spec.shuffle:
        random.Random(spec.shuffle_seed).shuffle(tasks)
    return tasks


def run_stream(cfg: RunConfig | dict[str, Any], job_dir: Path) -> list[dict[str, Any]]:
    """Run the stream of `cfg`; return one row per position (see sdebench.runs.stream_metrics.position_row)."""
    from sdebench.delivery.carried import CarriedMemory, after_episode
    from sdebench.runs.budget import BudgetSpent
    from sdebench.runs.config import ConfigError, settings
    from sdebench.runs.jobs import RunError
    from sdebench.runs.plan import episode_lines
    from sdebench.runs.run import budget_ledger, run_or_reuse, start_up, uses_model
    from sdebench.runs.stream_metrics import position_row

    try:
        conf = settings(cfg)
    except ConfigError as e:
        raise StreamError(str(e)) from None
    from sdebench.runs import sweep

    sweep.die_with_sweep()
    spec = StreamSpec.of(conf.stream)
    tasks = order_tasks(spec, conf)
    if not tasks:
        from sdebench.runs.jobs import filter_text

        raise StreamError(f"the stream has no tasks: no task in {conf.tasks_dir} matches {filter_text(conf)} "
                          "(set stream.tasks, or select.*)")
    dry = conf.dry_run or conf.plan  # plan=true never runs an episode
    try:
        ledger = budget_ledger(conf)
        factory = start_up(conf, build_agent=dry or uses_model(conf), check=not dry)
    except RunError as e:
        raise StreamError(str(e)) from None
    results_dir = Path(conf.results_dir or "results")
    sid = spec.stream_id()
    memory = CarriedMemory()
    rows = []
    try:
        if dry:
            lines = episode_lines(tasks, conf, factory, label=f"stream {sid}: ")
            print("dry run, nothing is run (positions in order; carried memory is earned as the stream runs):\n"
                  + "\n".join(lines), flush=True)
            return []
        from sdebench.runs import provenance

        provenance.note_job(conf, results_dir)  # which command, commit and config produced the records
        for pos, task in enumerate(tasks):
            stream = {
                "stream_id": sid,
                "stream_position": pos,
                "stream_carry": spec.carry,
                "stream_length": len(tasks),
                "memory_items": len(memory.entries),
                "memory_f": memory.count("F"),
                "memory_x": memory.count("X"),
                "memory_tokens": memory.tokens(),
                "memory_digest": memory.digest(),
            }
            # The key covers the stream, the position and the exact memory received, so a rerun
            # reuses a record only if everything before it came out the same.
            key_extra = f":stream:{sid}:{pos}:{memory.digest()}"
            head = f"[{pos + 1}/{len(tasks)}] {task.id} (stream {sid})"
            try:
                rec = run_or_reuse(task, conf, factory, results_dir, key_extra=key_extra, carried=memory, stream=stream,
                                   manifest=job_dir, head=head, ledger=ledger)
                fresh = None
                if spec.fresh:
                    fresh = run_or_reuse(task, conf, factory, results_dir, head=f"{head} fresh", ledger=ledger)
            except BudgetSpent as e:
                # a stream's later positions depend on the earlier ones: it ends here
                log.warning("stream %s ends at position %d, budget: %s", sid, pos + 1, e)
                sweep.report("budget", f"budget_usd={ledger.budget_usd:g}", n=len(tasks) - pos)
                break
            rows.append(position_row(rec, fresh))
            log.info("[%d/%d] %s: %s, %s interventions, memory %d items / %d tokens", pos + 1, len(tasks), task.id,
                     outcome_label(rec), rec.outcome.interventions, stream["memory_items"],
                     stream["memory_tokens"])
            memory = after_episode(memory, task.id, task.statement, rec, spec.carry)
    finally:
        factory.cleanup()
    return rows


def write_outputs(job_dir: Path, spec_id: str, rows: list[dict[str, Any]]) -> str:
    """Write stream.json, stream.md and learning_curve.png into `job_dir`; return the markdown."""
    from sdebench.runs import results
    from sdebench.runs.stream_metrics import markdown, plot_learning_curve

    job_dir.mkdir(parents=True, exist_ok=True)
    results.write_atomic(job_dir / STREAM_JSON, json.dumps({"stream_id": spec_id, "positions": rows}, indent=1))
    md = markdown(spec_id, rows)
    results.write_atomic(job_dir / "stream.md", md)
    try:
        plot_learning_curve({spec_id: rows}, job_dir / "learning_curve.png")
    except ImportError as e:  # the numbers are written; only the figure needs matplotlib
        log.warning("no learning_curve.png: %s", e)
    return md


def _callback_base():
    from hydra.experimental.callback import Callback

    return Callback


class StreamSweepCallback(_callback_base()):
    """Hydra callback: when a stream multirun ends, plot every stream of the sweep in one figure."""

    def on_multirun_end(self, config, **kwargs: Any) -> None:
        """Write streams.md and learning_curves.png into the sweep dir (a dry run has no streams)."""
        from sdebench.runs import results
        from sdebench.runs.stream_metrics import load_streams, markdown, plot_learning_curve

        if config.get("dry_run"):
            return

        sweep_dir = Path(config.hydra.sweep.dir)
        streams = load_streams(sweep_dir) if sweep_dir.is_dir() else {}
        if not streams:
            return
        md = "\n".join(markdown(sid, rows) for sid, rows in sorted(streams.items()))
        results.write_atomic(sweep_dir / "streams.md", md)
        try:
            plot_learning_curve(streams, sweep_dir / "learning_curves.png")
        except ImportError as e:
            log.warning("no learning_curves.png: %s", e)
        print(f"\nStreams of this sweep ({sweep_dir / 'streams.md'}):\n\n{md}", flush=True)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="stream_run")
def app(cfg: DictConfig) -> None:
    """Hydra entry point: one stream per job; single runs print the per-position table."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    plain = OmegaConf.to_container(cfg, resolve=True)
    hc = HydraConfig.get()
    job_dir = Path(hc.runtime.output_dir)
    try:
        rows = run_stream(plain, job_dir)
        if cfg.dry_run:
            return
        md = write_outputs(job_dir, StreamSpec.of(cfg.stream).stream_id(), rows)
    except Exception as e:  # noqa: BLE001 - one line, and a sweep goes on with its other jobs
        msg = str(e) if isinstance(e, StreamError) else f"{type(e).__name__}: {e}"
        print(f"sdebench.stream: error: {msg}", file=sys.stderr, flush=True)
        if hc.mode == RunMode.RUN:
            sys.exit(2)
        log.error("stream failed: %s", msg)
        from sdebench.runs import sweep

        sweep.report("job_failed", f"{hc.job.override_dirname or hc.job.name}: {msg}")
        return
    if hc.mode == RunMode.RUN:
        print("\n" + md, flush=True)


def main(argv: list[str] | None = None) -> None:
    """`sdebench stream [-m] OVERRIDE...`: the Hydra app behind checked overrides; exits non-zero on any problem."""
    from sdebench.runs import sweep

    sys.exit(sweep.cli(app, "sdebench stream", CONF_DIR, "stream_run", argv))


if __name__ == "__main__":
    main()
