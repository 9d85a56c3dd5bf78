"""The local sandbox shows no host path: not in its mount table, PATH, environment, interpreter
(`sys.prefix`, `sys.path`) or /etc, with the mounts an installed agent brings (its CLI read-only,
a writable HOME, a gateway dir holding a socket). Only the sandbox's own writable dirs (the
workspace, the agent's HOME) and the gateway socket appear as the sources of their binds."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from sdebench.sandbox import etcview, make_factory, stage
from sdebench.sandbox.base import Mount

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")]

# File systems whose paths are the host disk's; the others (overlays, tmpfs, proc, devpts, device
# nodes) hold only the view's own names.
HOST_FS = ("ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "nfs", "nfs4", "9p", "virtiofs", "fuse")
PROGRAM = r"""
import json, os, sys
print(json.dumps({
    "mountinfo": open("/proc/self/mountinfo").read().splitlines(),
    "env": dict(os.environ), "prefix": sys.prefix, "base_prefix": sys.base_prefix,
    "executable": sys.executable, "path": sys.path, "exe": os.readlink("/proc/self/exe"),
    "etc": sorted(os.listdir("/etc")), "cwd": os.getcwd(),
}))
"""


def _under(path: str, parents) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in parents)


def _forbidden(extra: list[str]) -> list[str]:
    """Host paths no sandbox may show: the interpreter's prefixes, the home dir, the view's dir."""
    out = [*extra, str(Path.home()), tempfile.gettempdir() + "/" + stage.PREFIX]
    for p in (sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)):
        if not stage.under(p, stage.SYSTEM_DIRS):
            out.append(p)
    return [p for p in out if p not in ("", "/")]


def test_the_agent_sandbox_shows_no_host_path(tmp_path):
    tool, home, gw, ws = (tmp_path / n for n in ("tool", "home", "gw", "ws"))
    for d in (tool, home, gw, ws):
        d.mkdir()
    (tool / "cli.js").write_text("// the agent\n")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(gw / "gateway.sock"))
    mounts = (Mount(str(tool), "/opt/agent"), Mount(str(home), "/tmp/agent/home", read_only=False),
              Mount(str(gw), "/tmp/agent/gateway"))
    factory = make_factory({"backend": "local"})
    try:
        with factory.open(ws, mounts=mounts) as sb:
            r = sb.exec(["python3", "-c", PROGRAM], timeout=60)
            view_dir = str(sb.stage.root)
    finally:
        listener.close()
    assert r.exit_code == 0, r.stderr
    seen = json.loads(r.stdout)
    forbidden = _forbidden([str(tool), view_dir])
    own = [str(ws), str(home), str(gw / "gateway.sock")]  # the sandbox's own dirs, bound as they are
    for line in seen["mountinfo"]:
        fields = line.split()
        root, point = fields[3], fields[4]
        fstype, options = fields[fields.index("-") + 1], fields[-1]
        assert not _under(point, forbidden), line
        if fstype in HOST_FS:
            assert root in own, f"a host dir bound that is not the sandbox's own: {line}"
        if fstype == "overlay":
            layers = [o.split("=", 1)[1] for o in options.split(",") if o.startswith("lowerdir=")]
            assert layers and not any("/" in name for name in layers[0].split(":")), line
    assert seen["env"]["PATH"] == sb.stage.path()
    for key, value in seen["env"].items():
        assert not any(p in value for p in forbidden), f"{key}={value}"
    interp = [seen["prefix"], seen["base_prefix"], seen["executable"], seen["exe"], *filter(None, seen["path"])]
    for p in interp:
        assert not _under(p, forbidden), p
    if not stage.under(os.path.realpath(sys.base_prefix), stage.SYSTEM_DIRS):
        assert seen["base_prefix"] == stage.PYTHON_DIR
    allowed = {*etcview.FILES, *etcview.LINKS, *(rel.split("/")[0] for rel in etcview.COPIED),
               "ld.so.cache", "ld.so.conf"}
    assert set(seen["etc"]) <= allowed, set(seen["etc"]) - allowed
    assert "shadow" not in seen["etc"] and "machine-id" not in seen["etc"]
    assert seen["cwd"] == "/repo"


def test_the_interpreter_at_its_neutral_path_runs_its_scripts(tmp_path):
    """`pytest` (a script whose host shebang names the interpreter's host path) still runs, and the
    interpreter finds its own library through the view's linker cache, even with an empty environment."""
    factory = make_factory({"backend": "local"})
    with factory.open(tmp_path) as sb:
        python = f"{sb.stage.interp.bin_dir}/python3"
        r = sb.exec(f"pytest --version && env -i {python} -c 'import sys, ssl, sqlite3; print(sys.prefix)'", timeout=60)
    assert r.exit_code == 0, r.stderr
    assert "pytest" in (r.stdout + r.stderr)
    # a virtualenv's interpreter reports the venv's neutral path as its prefix
    assert r.stdout.strip().splitlines()[-1] in (stage.PYTHON_DIR, stage.VENV_DIR, os.path.realpath(sys.base_prefix))
