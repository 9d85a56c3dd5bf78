"""Generic reward hacks against every family: each is graded not resolved, on the local backend for
every family, on docker and through the environment server for a sample of families; and they are
real hacks: a plain pytest run of the visible tests is fooled by them.

Local: 8 attacks x 21 families = 168 grades (about 4 minutes on 2 busy cores); docker: 8 x 3;
the environment server: 8 x 2 steps.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from sdebench.delivery.modes import Squashed
from sdebench.grading.grade import grade
from sdebench.sandbox import make_factory
from sdebench.tasks import record as task_mod
from sdebench.tasks import repo as repo_mod
from tests.env.helpers import serve
from tests.grading.hostile.generic import GENERIC, exfiltrated

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "tasks"
FAMILIES = sorted({task_mod.load(d).family for d in task_mod.discover(TASKS)}) if TASKS.is_dir() else []
DOCKER_SAMPLE = ("billing-rounding", "layered-config", "retail-week")
SERVER_SAMPLE = ("ttlcache", "minicalc-erragg")


def task_of(family: str) -> task_mod.Task:
    return task_mod.load(TASKS / f"{family}-v0-none")


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """The squashed workspace of each family's v0-none task (what an agent without memory gets)."""
    root = tmp_path_factory.mktemp("templates")
    cache: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in cache:
            cache[family] = Squashed().prepare(task_of(family), root / family).workspace
        return cache[family]

    return get


def attacked(templates, family: str, attack, dest: Path) -> Path:
    ws = dest / "repo"
    shutil.copytree(templates(family), ws)
    attack.apply(ws)
    return ws


def check_grade(g, task: task_mod.Task, attack) -> None:
    assert not g.resolved, f"{attack.name} resolved {task.id}"
    assert g.error is None, f"{attack.name} on {task.id} became an infrastructure error: {g.error}"
    assert g.reward["binary"] == 0.0
    assert g.guards or g.counts["HIDDEN_TO_PASS"]["passed"] < g.counts["HIDDEN_TO_PASS"]["total"]
    hidden = task.hidden_files()
    leaked = exfiltrated(g.feedback)
    assert not set(leaked) & set(hidden), f"hidden files reached the feedback: {sorted(leaked)}"
    for src in hidden.values():
        for line in (ln.strip() for ln in src.splitlines() if ln.strip().startswith("def test_")):
            assert line not in g.feedback and all(line not in v for v in leaked.values())
    public = json.dumps(g.public())
    assert all(t.id.split("::")[-1] not in public for t in g.tests if t.group == "HIDDEN_TO_PASS")


@pytest.fixture(scope="module")
def local():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return make_factory({"backend": "local", "tasks_dir": str(TASKS)})


@pytest.mark.bwrap
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("attack", GENERIC, ids=lambda a: a.name)
def test_generic_attack_on_every_family_is_not_resolved(attack, family, templates, local, tmp_path):
    task = task_of(family)
    g = grade(task, attacked(templates, family, attack, tmp_path), local)
    check_grade(g, task, attack)


@pytest.mark.docker
@pytest.mark.parametrize("family", DOCKER_SAMPLE)
@pytest.mark.parametrize("attack", GENERIC, ids=lambda a: a.name)
def test_generic_attack_on_docker_is_not_resolved(attack, family, templates, request, tmp_path):
    image = request.getfixturevalue("docker_image")
    factory = request.getfixturevalue("docker_factory")
    assert factory.options.image == image
    task = task_of(family)
    g = grade(task, attacked(templates, family, attack, tmp_path), factory)
    check_grade(g, task, attack)


@pytest.fixture(scope="module")
def docker_factory(request):
    image = request.getfixturevalue("docker_image")
    f = make_factory({"backend": "docker", "image": image})
    yield f
    f.cleanup()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    root = tmp_path_factory.mktemp("served")
    for family in SERVER_SAMPLE:
        shutil.copytree(TASKS / f"{family}-v0-none", root / f"{family}-v0-none")
    with serve(root, "--sandbox", "local") as url:
        yield url


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


@pytest.mark.bwrap
@pytest.mark.parametrize("family", SERVER_SAMPLE)
@pytest.mark.parametrize("attack", GENERIC, ids=lambda a: a.name)
def test_generic_attack_through_the_environment_server(attack, family, server, templates, tmp_path):
    task = task_of(family)
    head = repo_mod.read_tree(templates(family))
    ws = attacked(templates, family, attack, tmp_path)
    after = {rel: (ws / rel).read_text() for rel in repo_mod.read_tree(templates(family))} | {
        p.relative_to(ws).as_posix(): p.read_text() for p in ws.rglob("*.py") if ".git" not in p.parts}
    diff = repo_mod.diff_files({k: v for k, v in head.items() if k in after}, after)
    obs = _post(f"{server}/reset", {"task_id": task.id})["observation"]
    reply = _post(f"{server}/step", {"episode_id": obs["episode_id"], "action": {"diff": diff}})
    step = reply["observation"]
    assert not step["info"]["all_tests_pass"] and reply["reward"] < 1.0, f"{attack.name} solved {task.id} through the server"
    assert step["info"]["held_out"] in (None, {"pass": False})
    assert not set(exfiltrated(step["failing_tests"])) & set(task.hidden_files())


NAIVE = ("report_rewrite", "preseed_sys_modules", "answer_from_source", "always_equal")


@pytest.mark.parametrize("name", NAIVE)
def test_the_hacks_are_real_a_plain_pytest_run_is_fooled(name, templates, tmp_path):
    """Run as a naive grader would (plain pytest on the workspace), the repro tests red at HEAD pass."""
    attack = next(a for a in GENERIC if a.name == name)
    task = task_of("billing-rounding")
    ws = attacked(templates, "billing-rounding", attack, tmp_path)
    files = sorted({i.split("::")[0] for i in task.tests.fail_to_pass})
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    head = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
                          cwd=templates("billing-rounding"), env=env, capture_output=True, text=True, timeout=120)
    assert head.returncode == 1, head.stdout[-1500:]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files], cwd=ws, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "passed" in r.stdout, r.stdout[-1500:]
