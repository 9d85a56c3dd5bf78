"""What a job of a sweep asks Slurm for (`hydra/launcher=slurm`): a time limit, memory and CPUs from the run config.

The launcher config (conf/hydra/launcher/slurm.yaml) reads them through OmegaConf resolvers registered
here (`register()`, run wherever the config tree is located):

- `sdebench_slurm_minutes`: every episode of the job may take `limits.max_wall_s`; the job runs them
  `concurrency` at a time, so its worst case is ceil(episodes / concurrency) rounds of that, plus
  start-up. The episodes are those the sweep's base config selects (its filters without the swept
  values: an upper bound). A job cut off anyway loses nothing: rerunning the command (or the
  launcher's requeue on a time-out) skips the finished episodes.
- `sdebench_slurm_mem_gb`, `sdebench_slurm_cpus`: memory and CPUs that grow with `concurrency`.
"""

from __future__ import annotations

import math
from typing import Any

STARTUP_MIN = 10  # imports, pre-flight checks, a slow node's first sandbox
MAX_MINUTES = 7 * 24 * 60  # past a week no partition takes it; resumption covers the rest
BASE_MEM_GB, MEM_GB_PER_EPISODE = 2.0, 0.5
EPISODES_PER_CPU, MAX_CPUS = 4, 8


def episodes_of(conf: Any) -> int:
    """How many episodes one job of `conf` (the run config) selects (1 when the tasks cannot be read now: the job says why)."""
    from sdebench.errors import ConfigError, RunError
    from sdebench.runs.config import settings
    from sdebench.runs.jobs import select_tasks

    try:
        return max(1, len(select_tasks(settings(conf))))
    except (RunError, ConfigError):
        return 1


def minutes(episodes: int, concurrency: int, max_wall_s: float) -> int:
    """The time limit of a job running `episodes` episodes, `concurrency` at a time, each within `max_wall_s`."""
    rounds = math.ceil(episodes / max(1, concurrency))
    return min(MAX_MINUTES, math.ceil(rounds * float(max_wall_s) / 60) + STARTUP_MIN)


def _minutes(*, _root_: Any) -> int:
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(_root_, resolve=False)
    cfg.pop("hydra", None)
    cfg = OmegaConf.to_container(OmegaConf.create(cfg), resolve=True)
    from sdebench.errors import ConfigError
    from sdebench.runs.config import settings

    try:
        conf = settings(cfg)
    except ConfigError:
        return minutes(1, 1, 1800)  # the job itself reports its config error: a short limit is enough for that
    return minutes(episodes_of(conf), conf.concurrency, conf.limits.max_wall_s)


def mem_gb(concurrency: Any) -> int:
    """Memory in GB (whole: submitit's type) for a job running `concurrency` episodes at once."""
    return math.ceil(BASE_MEM_GB + MEM_GB_PER_EPISODE * max(1, int(concurrency)))


def cpus(concurrency: Any) -> int:
    """CPUs for a job running `concurrency` episodes at once (episodes mostly wait; grading computes)."""
    return max(1, min(MAX_CPUS, math.ceil(int(concurrency) / EPISODES_PER_CPU)))


def register() -> None:
    """Register the resolvers (again is harmless)."""
    from omegaconf import OmegaConf

    for name, fn in (("sdebench_slurm_minutes", _minutes), ("sdebench_slurm_mem_gb", mem_gb),
                     ("sdebench_slurm_cpus", cpus)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
