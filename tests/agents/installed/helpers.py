"""Shared pieces of the installed-agent tests: a scripted model server and whole episodes."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from sdebench.agents.trajectory import read

ROOT = Path(__file__).resolve().parents[3]
KEY_ENV = "SDEBENCH_TESTMODEL_KEY"
PLANTED = "sk-PLANTED-0123456789abcdef0123456789abcdef"
PRICES = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}  # conf/model/testmodel*.yaml


def usage(step: dict[str, Any], p: int, c: int, k: int = 0) -> dict[str, Any]:
    """`step` with scripted usage figures (prompt includes cached, OpenAI style)."""
    return {**step, "usage": {"prompt_tokens": p, "completion_tokens": c, "cached_tokens": k}}


def cost(p: int, c: int, k: int = 0) -> float:
    """Hand computation at the configured test prices."""
    return ((p - k) * PRICES["input"] + k * PRICES["cache_read"] + c * PRICES["output"]) / 1e6


def totals(steps: list[dict[str, Any]]) -> tuple[int, int, int, float]:
    """Prompt, completion, cached tokens and cost of scripted steps."""
    p = sum(s["usage"]["prompt_tokens"] for s in steps)
    c = sum(s["usage"]["completion_tokens"] for s in steps)
    k = sum(s["usage"]["cached_tokens"] for s in steps)
    return p, c, k, sum(cost(s["usage"]["prompt_tokens"], s["usage"]["completion_tokens"], s["usage"]["cached_tokens"])
                        for s in steps)


def api_base_for(model: str, base: str) -> str:
    """The address a test-model entry takes (`base` is the test model's `.../v1`): each entry reaches
    the test model through its own litellm provider, at that provider's path."""
    root = base.removesuffix("/v1")
    return {"testmodel-anthropic": root, "testmodel-gemini": root + "/v1beta"}.get(model, base)


def post_script(base: str, steps: list[dict[str, Any]]) -> None:
    """Replace the server's script."""
    req = urllib.request.Request(base.removesuffix("/v1") + "/script", data=json.dumps(steps).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def requests(base: str) -> list[dict[str, Any]]:
    """What the server received."""
    with urllib.request.urlopen(base.removesuffix("/v1") + "/requests", timeout=10) as r:
        return json.loads(r.read())


def compose(*overrides: str) -> dict[str, Any]:
    """The real resolved run config (Hydra compose over conf/)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


def episode(task, cfg: dict[str, Any], tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one real episode; returns its record and trajectory events."""
    from sdebench.runs.assemble import run_episode
    from sdebench.sandbox import make_factory

    factory = make_factory(dict(cfg["sandbox"]))
    traj = tmp_path / "traj.jsonl"
    try:
        rec = run_episode(task, cfg, factory, trajectory_path=traj, work_root=tmp_path / "work").flat()
    finally:
        factory.cleanup()
    return rec, read(traj)
