"""The run config: where the Hydra config tree lives, and the checks every entry point applies to it.

`check(cfg)` takes the resolved plain config of `python -m sdebench.run` or `sdebench.stream` and
returns it with deprecated keys moved; `sources(value)` validates `source` (a plain key: one of
H, K, F, X, none, all, or a comma list of them). `settings(cfg)` is that config read with types,
once: a `schema.RunConfig` whose keys the mapping leaves out take the values of the YAML tree
(`conf/config.yaml`, `conf/grading/default.yaml`: the only defaults), which the run layer reads
instead of the mapping; each component still gets only its own section.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sdebench import CONF_DIR
from sdebench.errors import ConfigError
from sdebench.runs import schema
from sdebench.tasks.artifacts import SOURCES
from sdebench.tasks.selection import ANY, comma_list

schema.register()  # the tree's options extend these (`- /schema/<name>@_here_`)
SOURCE_CHOICES = (*SOURCES, ANY)
# The groups whose options are components' sections (typed by the component, not the run schema):
# a mapping that leaves one out gets None, which each component reads as its own default.
SECTIONS = ("agent", "model", "delivery", "memory", "sandbox", "stream")
# Top-level keys that moved under `model`; still accepted, with a warning.
MOVED_TO_MODEL = ("cost_tracking",)

log = logging.getLogger("sdebench.config")


def sources(raw: Any = ANY) -> tuple[str, ...] | None:
    """The sources a run config's `source` value selects (None: all of them)."""
    if isinstance(raw, dict):  # `source` was once a config group with a `name` key
        raise ConfigError(f"source must be a plain value ({', '.join(SOURCE_CHOICES)}), got a mapping")
    values = comma_list(raw)
    bad = [v for v in values or () if v not in SOURCES]
    if bad:
        raise ConfigError(f"source={raw}: unknown source {', '.join(map(repr, bad))} (choose {', '.join(SOURCE_CHOICES)})")
    return values


def check(cfg: dict[str, Any]) -> dict[str, Any]:
    """`cfg` validated (source, claims) with deprecated top-level keys moved under `model`, each with a one-line warning."""
    cfg = dict(cfg)
    sources(cfg.get("source", ANY))
    from sdebench.runs.lease import LEASE_S, ClaimMode

    try:
        ClaimMode.of(cfg.get("claims"), cfg.get("claim_lease_s", LEASE_S))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    for key in MOVED_TO_MODEL:
        value = cfg.pop(key, None)
        if value is None:
            continue
        log.warning("%s=%s is deprecated: write model.%s=%s", key, value, key, value)
        model = dict(cfg.get("model") or {})
        model[key] = value
        cfg["model"] = model
    return cfg


@functools.cache
def tree_values() -> dict[str, Any]:
    """The run config's values as the YAML tree sets them (top level and grading), without its groups' options."""
    top = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "config.yaml"))
    grading = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "grading" / "default.yaml"))
    assert isinstance(top, dict) and isinstance(grading, dict)
    for part in (top, grading):
        part.pop("defaults", None)
        part.pop("hydra", None)
    return {**top, "grading": grading, **dict.fromkeys(SECTIONS)}


def settings(cfg: Mapping[str, Any] | schema.RunConfig) -> schema.RunConfig:
    """`cfg` read with types (a `schema.RunConfig`; one already is comes back as it is); ConfigError in one line."""
    if isinstance(cfg, schema.RunConfig):
        return cfg
    given = check(dict(cfg))
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema.RunConfig), tree_values(), given)
        typed = OmegaConf.to_object(merged)
    except OmegaConfBaseException as e:
        key = getattr(e, "full_key", None)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"{key}: {first}" if key else first) from None
    assert isinstance(typed, schema.RunConfig)
    return typed


def section(value: Any) -> dict[str, Any]:
    """A component's section as a plain dict (None: empty)."""
    return dict(value or {})


def plain(run: schema.RunConfig) -> dict[str, Any]:
    """`run` as the plain mapping a resolved Hydra config gives (what the config hash and provenance read)."""
    out = OmegaConf.to_container(OmegaConf.structured(run), enum_to_str=True)
    assert isinstance(out, dict)
    return out
