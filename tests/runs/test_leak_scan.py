"""Nothing an agent can see names its task: for every delivery and backend, an agent scans its
working directory, environment, every file under the workspace (`.git` included, objects
decompressed), `git reflog`, `git config -l` and its mount table for the task id, family,
variant, bundle and task-store path. A control token it plants itself must be found, so the scan
is shown to work."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from sdebench.agents.base import Capabilities, RunResult, Usage
from sdebench.components import DELIVERIES
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.sandbox.base import WORKDIR
from sdebench.tasks import record as task_mod
from sdebench.tasks import repo as repo_mod
from tests.sandbox.conftest import docker_image  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[2]
TASK = "billing-rounding-v0-H"  # H: the full delivery carries the whole history
BACKENDS = ("local", "docker", "unsafe_local")


class ScanAgent:
    """Runs the scan through its bash tool, then submits."""

    name = "scanner"
    capabilities = Capabilities()

    def __init__(self, patterns: list[str], control: str):
        self.patterns, self.control = patterns, control
        self.usage = Usage()
        self.out: dict[str, str] = {}

    def start(self, ctx) -> None:
        self.tools = ctx.toolbox

    def close(self) -> None:
        pass

    def bash(self, key: str, cmd: str) -> None:
        self.out[key] = self.tools.call("bash", {"command": cmd}).output

    def run(self) -> RunResult:
        # Each command may run in a fresh sandbox (fresh /tmp): the patterns go on the command line.
        pats = " ".join(f"-e '{p}'" for p in [*self.patterns, self.control])
        self.bash("setup", f"printf '%s' '{self.control}' > control-file.txt; echo ok")
        self.bash("pwd", "pwd")
        self.bash("hits", f"{{ pwd; env; git reflog; git config -l; cat /proc/self/mountinfo; hostname; "
                          f"grep -raoF {pats} . ; git cat-file --batch-all-objects --batch; }} 2>&1 | "
                          f"grep -aoF {pats} | sort | uniq -c")
        self.bash("reflog", "git reflog | wc -l; git remote | wc -l; ls .git")
        return RunResult("submitted", 1)

    def feedback(self, text: str) -> None:
        pass


def _factory(backend: str, request, tasks_dir: Path):
    if backend == "local":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap is not installed")
        return make_factory({"backend": "local", "tasks_dir": str(tasks_dir)})
    if backend == "docker":
        return make_factory({"backend": "docker", "image": request.getfixturevalue("docker_image")})
    return make_factory({"backend": "unsafe_local"})


@pytest.mark.parametrize("delivery", sorted(DELIVERIES))
@pytest.mark.parametrize("backend", [pytest.param(b, marks=[pytest.mark.docker] if b == "docker" else
                                                  [pytest.mark.bwrap] if b == "local" else []) for b in BACKENDS])
def test_nothing_the_agent_sees_names_its_task(backend, delivery, request, tmp_path):
    tasks_dir = ROOT / "tasks"
    task = task_mod.load(tasks_dir / TASK)
    content = "\n".join(repo_mod.read_tree(repo_mod.unbundle(task.bundle, tmp_path / "probe")).values())
    names = [task.id, task.family, f"-v{task.variant}-", str(tasks_dir.resolve()), str(task.path.resolve()),
             "repo.bundle", "/tasks/"]
    assert not [n for n in names if n in content], "precondition: the task's own files do not spell its names"
    control = "ctl" + secrets.token_hex(8)
    agent = ScanAgent(names, control)
    factory = _factory(backend, request, tasks_dir)
    try:
        cfg = {"delivery": {"name": delivery}, "max_interventions": 0, "tools": {"max_output_chars": 100_000},
               "grading": {"feedback_hidden": "binary"}}
        rec = run_episode(task, cfg, factory, agent=agent, work_root=tmp_path / "work")
    finally:
        factory.cleanup()
    assert rec.outcome.error is None and rec.outcome.stop_reason == "max_interventions", rec
    assert agent.out["setup"].strip().endswith("ok")
    hits = agent.out["hits"]
    assert control in hits, f"the scan found not even its own control token: {hits!r}"
    leaked = [n for n in names if n in hits]
    assert leaked == [], f"{backend}/{delivery}: the agent can see {leaked}: {hits}"
    out = agent.out["reflog"].split("stdout:", 1)[-1].split()
    assert out[:2] == ["0", "0"], agent.out["reflog"]  # no reflog entry, no remote
    for gone in ("logs", "FETCH_HEAD", "ORIG_HEAD", "description"):
        assert gone not in out[2:]
    pwd = agent.out["pwd"].split("stdout:", 1)[-1].strip()
    assert pwd == WORKDIR if backend != "unsafe_local" else Path(pwd).name == "repo"
