"""The repository as a deployable OpenEnv environment: uv.lock in step with pyproject.toml, the
`server.app` entry serving the environment, and the Dockerfile serving what openenv.yaml declares
(`openenv validate .` itself: tests/interop/test_openenv_peer.py)."""

from __future__ import annotations

import importlib
import re
import shutil
import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from tests.conftest import ROOT


def _declared() -> dict[tuple[str, str], SpecifierSet]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = {}
    for extra, deps in [("", project["dependencies"]), *project["optional-dependencies"].items()]:
        for dep in deps:
            r = Requirement(dep)
            out[(canonicalize_name(r.name), extra)] = r.specifier
    return out


def test_uv_lock_is_in_step_with_pyproject():
    """uv.lock was resolved from today's dependencies (after changing them: `uv lock`)."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (root,) = [p for p in lock["package"] if p["name"] == "sdebench"]
    locked = {}
    for d in root["metadata"]["requires-dist"]:
        extra = re.fullmatch(r"extra == '([\w-]*)'", d.get("marker", "extra == ''")).group(1)
        locked[(canonicalize_name(d["name"]), extra)] = SpecifierSet(d.get("specifier", ""))
    assert locked == _declared()


def test_server_app_serves_the_environment(tasks_dir, tmp_path, monkeypatch):
    """`server.app:app` (openenv.yaml's app) is the environment server, configured from the environment."""
    from fastapi.testclient import TestClient

    shutil.copytree(tasks_dir / "billing-rounding-v0-K", tmp_path / "billing-rounding-v0-K")
    monkeypatch.setenv("SDEBENCH_TASKS_DIR", str(tmp_path))
    monkeypatch.setenv("SDEBENCH_SANDBOX", "unsafe_local")
    monkeypatch.syspath_prepend(str(ROOT))
    module = importlib.reload(importlib.import_module("server.app"))
    with TestClient(module.app) as client:
        assert client.get("/health").json()["status"] == "healthy"
        assert [t["id"] for t in client.get("/").json()["tasks"]] == ["billing-rounding-v0-K"]
    assert "def main(" in (ROOT / "server" / "app.py").read_text()


def test_dockerfile_serves_what_openenv_yaml_declares():
    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    assert manifest["app"] == "server.app:app" and manifest["type"] == "space"
    docker = (ROOT / "Dockerfile").read_text()
    port = manifest["port"]
    assert f"EXPOSE {port}\n" in docker and f"PORT={port}" in docker
    assert "--host 0.0.0.0" in docker and "--sandbox \\\"$SDEBENCH_SANDBOX\\\"" in docker
    for src in re.findall(r"^COPY (?:--chown=\S+ )?(.+) \S+$", docker, flags=re.M):
        for name in src.split():
            assert (ROOT / name).exists(), name
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert not {"tasks", "conf", "sdebench", "server", "uv.lock"} & set(ignored)
