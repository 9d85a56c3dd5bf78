"""A small real sweep for the Inspect export tests: records and trajectories written by the episode
loop as `sdebench run` writes them (record_path, key, trajectory beside the record).

Cells: oracle x squashed (resolved, and an episode of another task whose agent the loop refuses:
in error), noop x squashed (two seeds of one task: two epochs, each unresolved after its fed-back
grade), llm x squashed on the test model server (a wrong fix, feedback, the right fix: messages
with tool calls and usage).
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

from sdebench.env.environment import patch_paths
from sdebench.runs import results, schema
from sdebench.runs.assemble import run_episode
from sdebench.runs.record import Identity
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task
from sdebench.testing import testmodel
from tests.minitask import ROOT, build_task

KEY_ENV = "SDEBENCH_TESTMODEL_KEY"  # conf/model/testmodel.yaml's api_key_env
TASK = "mini-pricing-v0-K"
OTHER = "mini-pricing-v0-H"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200}


class BrokenAgent:
    """An agent the episode loop refuses (it declares no capabilities): the episode ends in error."""

    name = "broken"


def _edits(task: Task, patch: str, scratch: Path) -> list[dict[str, Any]]:
    """One write_file step per file the patch touches (the patched file's whole text)."""
    work = repo_mod.unbundle(task.bundle, scratch)
    repo_mod.apply_patch(work, patch)
    return [{"tool": "write_file", "arguments": {"path": rel, "content": (work / rel).read_text()}, "usage": USAGE}
            for rel in patch_paths(patch)]


def _cfg(agent: str, base: str | None = None, **extra: Any) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    overrides = [f"agent={agent}", "delivery=squashed", "sandbox=unsafe_local"]
    if base is not None:
        overrides += ["model=testmodel", f"model.api_base={base}"]
    overrides += [f"{k}={v}" for k, v in extra.items()]
    schema.register()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return OmegaConf.to_container(compose(config_name="config", overrides=overrides), resolve=True)


def _write(task: Task, cfg: dict[str, Any], results_dir: Path, work: Path, agent: Any = None, seed: int = 0) -> None:
    """Run one episode and store its record and trajectory as `sdebench run` does."""
    cfg = {**cfg, "seed": seed}
    model = (cfg.get("model") or {}).get("name", "none")
    ident = Identity(task.id, task.family, task.variant, task.source, task.bottleneck, cfg["delivery"]["name"],
                     cfg["agent"]["name"], model, seed, task.competency)
    cfg_hash = results.config_hash(cfg)
    key = results.episode_key(task.content_hash(), ident.delivery, ident.agent, ident.model, seed, cfg_hash)
    path = results.record_path(results_dir, ident, key)
    traj = results.trajectory_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    factory = make_factory(dict(cfg["sandbox"]))
    try:
        rec = run_episode(task, cfg, factory, trajectory_path=traj, work_root=work, agent=agent)
    finally:
        factory.cleanup()
    st = rec.storage
    st.task_hash, st.config_hash, st.key, st.trajectory = task.content_hash(), cfg_hash, key, str(traj.resolve())
    results.write_record(path, rec)


def build_sweep(root: Path) -> Path:
    """Run the sweep under `root`; returns its results dir."""
    task, other = build_task(root / "tasks", "K"), build_task(root / "tasks", "H")
    out, work = root / "results", root / "work"
    _write(task, _cfg("oracle"), out, work)
    for seed in (0, 1):
        _write(task, _cfg("noop", max_interventions=1), out, work, seed=seed)
    _write(other, _cfg("oracle"), out, work, agent=BrokenAgent())
    wrong, right = _edits(task, task.conventional_patch, work / "wrong"), _edits(task, task.oracle_patch, work / "right")
    submit = {"tool": "submit", "arguments": {}, "usage": USAGE}
    read = {"tool": "read_file", "arguments": {"path": "shop/pricing.py"}, "usage": USAGE}
    steps = [read, *wrong, submit, *right, submit]
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        base = testmodel.base_url(srv)
        req = urllib.request.Request(base.removesuffix("/v1") + "/script", data=json.dumps(steps).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()
        os.environ.setdefault(KEY_ENV, "sk-test")
        _write(task, _cfg("llm", base, **{"agent.retry.backoff_base_s": 0.01}), out, work)
    return out
