"""Sandbox backends: `local` (bubblewrap), `docker`, and `unsafe_local` (plain subprocess)."""

from __future__ import annotations

from typing import Any

from sdebench.sandbox.base import ExecResult, Sandbox, SandboxError, SandboxFactory
from sdebench.sandbox.unsafe import UnsafeLocalFactory

__all__ = ["ExecResult", "Sandbox", "SandboxError", "SandboxFactory", "make_factory"]


def make_factory(cfg: dict[str, Any] | None = None) -> SandboxFactory:
    """Build the sandbox factory named by `cfg['backend']` with the rest of `cfg` as options."""
    cfg = dict(cfg or {})
    backend = cfg.pop("backend", "unsafe_local")
    if backend == "unsafe_local":
        return UnsafeLocalFactory(**cfg)
    raise SandboxError(f"unknown sandbox backend {backend!r} (choose local, docker or unsafe_local)")
