"""Sandbox backends: `local` (bubblewrap), `docker`, and `unsafe_local` (plain subprocess).

`make_factory(cfg)` builds the backend `cfg['backend']` names through `sdebench.components` (a
registered name or `module:Class`); the three functions below are the built-in backends' builders.
"""

from __future__ import annotations

from typing import Any

from sdebench.sandbox.base import ExecResult, Sandbox, SandboxError, SandboxFactory

__all__ = ["BACKENDS", "ExecResult", "Sandbox", "SandboxError", "SandboxFactory", "make_factory"]

BACKENDS = ("local", "docker", "unsafe_local")
# Keys naming host dirs that commands must never see; folded into the backend's mask list.
MASK_KEYS = ("tasks_dir", "results_dir", "hidden_dirs")


def _mask_list(cfg: dict[str, Any]) -> tuple[str, ...]:
    masked: list[str] = [str(m) for m in (cfg.pop("masked", None) or ()) if m]
    for key in MASK_KEYS:
        value = cfg.pop(key, None)
        if not value:
            continue
        masked += [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    return tuple(masked)


def local_factory(**cfg: Any) -> SandboxFactory:
    """`sandbox=local`: bubblewrap, with the task store, results dir and `masked` paths hidden."""
    from sdebench.sandbox.local import LocalFactory, options_from

    masked = _mask_list(cfg)
    return LocalFactory(options_from({**cfg, "masked": masked}))


def docker_factory(**cfg: Any) -> SandboxFactory:
    """`sandbox=docker`: one container per sandbox."""
    from sdebench.sandbox.docker import DockerFactory
    from sdebench.sandbox.docker import options_from as docker_options

    _mask_list(cfg)  # the container sees only the workspace copied into it
    return DockerFactory(docker_options(cfg))


def unsafe_local_factory(**cfg: Any) -> SandboxFactory:
    """`sandbox=unsafe_local`: plain host subprocesses (no isolation)."""
    from sdebench.sandbox.unsafe import UnsafeLocalFactory

    _mask_list(cfg)  # nothing is hidden without a sandbox; the keys are accepted and ignored
    try:
        return UnsafeLocalFactory(**cfg)
    except TypeError:
        raise SandboxError(f"unknown sandbox.unsafe_local option(s): {', '.join(sorted(cfg))}") from None


def make_factory(cfg: dict[str, Any] | None = None) -> SandboxFactory:
    """Build the sandbox factory named by `cfg['backend']` (default `local`) with the rest of `cfg` as options."""
    from sdebench.components import build_sandbox

    return build_sandbox(cfg)
