"""The run config: where the Hydra config tree lives, and the checks every entry point applies to it.

`check(cfg)` takes the resolved plain config of `python -m sdebench.run` or `sdebench.stream` and
returns it with deprecated keys moved; `sources(cfg)` validates `source` (a plain key: one of
H, K, F, X, none, all, or a comma list of them).
"""

from __future__ import annotations

import logging
from typing import Any

from sdebench import CONF_DIR  # noqa: F401 - re-exported: the run commands read it from here
from sdebench.errors import ConfigError
from sdebench.runs import schema
from sdebench.tasks.artifacts import SOURCES
from sdebench.tasks.selection import ANY, comma_list

schema.register()  # the tree's options extend these (`- /schema/<name>@_here_`)
SOURCE_CHOICES = (*SOURCES, ANY)
# Top-level keys that moved under `model`; still accepted, with a warning.
MOVED_TO_MODEL = ("cost_tracking",)

log = logging.getLogger("sdebench.config")


def sources(cfg: dict[str, Any]) -> tuple[str, ...] | None:
    """The sources `cfg['source']` selects (None: all of them)."""
    raw = cfg.get("source", ANY)
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
    sources(cfg)
    from sdebench.runs.lease import ClaimMode

    try:
        ClaimMode.of_config(cfg)
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
