"""Export tasks as Harbor task dirs (Harbor's current task schema).

A Harbor task dir holds instruction.md, task.toml, environment/Dockerfile (the agent works in
/app), tests/test.sh (the verifier: writes /logs/verifier/reward.json, reward 0 unless proven
otherwise) and solution/solve.sh (the reference fix). Our tasks export with their full repo
(history and memory artifacts: the `full` delivery) from repo.bundle. The verifier runs in a
separate container built from the same environment, with the agent's /app collected as an
artifact, so the hidden tests never enter the container the agent works in; test.sh runs
tests/verify.py, which applies sdebench's grading rules (and removes the answer key before any
submitted code runs, see harbor_verify.py), and the test ids are full pytest node ids.
Imported BugsInPy tasks export as their original dirs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import tomli_w

from sdebench.errors import InteropError
from sdebench.grading import records, rules
from sdebench.grading.testrun import runner_source
from sdebench.interop import bugsinpy as bp
from sdebench.interop import container, nodeids
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import artifacts
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

SCHEMA_VERSION = "1.4"
ORG = "sdebench"
VERIFY_TIMEOUT = 300  # s per phase; the verifier runs its two phases one after the other
APP = "/app"
PATCH_EOF = "SDEBENCH_ORACLE_PATCH_EOF"

TEST_SH = """\
#!/bin/bash
# Default-fail: reward 0 unless verify.py proves every graded test passes.
LOG_DIR="${SDEBENCH_LOG_DIR:-/logs/verifier}"
mkdir -p "$LOG_DIR"
echo '{"reward": 0}' > "$LOG_DIR/reward.json"
python3 -B "$(cd "$(dirname "$0")" && pwd)/verify.py" || true
exit 0
"""


class HarborError(InteropError, ValueError):
    """A task that cannot be exported (the message says why)."""


def task_toml(task: Task) -> str:
    """Harbor's task.toml for `task`: [task] name `sdebench/<id>`, sdebench identity under [metadata]."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "task": {
            "name": f"{ORG}/{task.id}",
            "description": f"Fix a bug in a synthetic Python repo ({task.family}); graded by sdebench's rules.",
            "authors": [{"name": "sdebench"}],
            "keywords": [task.family, f"source-{task.source}", task.bottleneck, *task.tags],
        },
        "metadata": {
            "author_name": "sdebench",
            "category": "debugging",
            "tags": [task.family, f"source:{task.source}", task.bottleneck, *task.tags],
            "sdebench_task_id": task.id,
            "sdebench_content_hash": task.content_hash(),
        },
        # The verifier gets a fresh container of the same image with the agent's /app: the hidden
        # tests are uploaded there only, never into the container the agent worked in.
        "verifier": {"timeout_sec": float(2 * VERIFY_TIMEOUT + 60), "environment_mode": "separate"},
        "agent": {"timeout_sec": 1800.0},
        "environment": {"build_timeout_sec": 600.0, "cpus": 1, "memory_mb": 2048, "workdir": APP},
        "artifacts": [APP],
    }
    return tomli_w.dumps(doc)


def solve_sh(patch: str) -> str:
    """solution/solve.sh applying `patch` in /app."""
    if any(line == PATCH_EOF for line in patch.splitlines()):
        raise HarborError("the oracle patch contains the heredoc delimiter")
    body = patch if patch.endswith("\n") else patch + "\n"
    return (
        "#!/bin/bash\n# The reference fix: apply oracle.patch in the repo.\nset -euo pipefail\n"
        f'cd "${{SDEBENCH_APP:-{APP}}}"\n'
        f"git apply --whitespace=nowarn <<'{PATCH_EOF}'\n{body}{PATCH_EOF}\n"
    )


def harbor_files(task: Task, factory: SandboxFactory | None = None,
                 base_image: str = container.DEFAULT_BASE_IMAGE) -> dict[str, bytes]:
    """The Harbor task dir of `task` as relative path -> bytes (`factory` runs the node-id collection)."""
    if task.grader == bp.GRADER:
        try:
            return bp.export_files(task)  # already a Harbor task dir
        except bp.NotExportable as e:
            raise HarborError(str(e)) from None
    if factory is None:
        raise HarborError("a sandbox factory is needed to collect the full node ids")
    try:
        ids = nodeids.full_ids(task, factory)
    except nodeids.NodeIdError as e:
        raise HarborError(str(e)) from None
    files: dict[str, bytes] = {
        "instruction.md": (task.statement.rstrip("\n") + f"\n\nThe repository is checked out at {APP}.\n").encode(),
        "task.toml": task_toml(task).encode(),
        "environment/Dockerfile": container.dockerfile(base_image, APP).encode(),
        f"environment/{container.BUNDLE_NAME}": task.bundle.read_bytes(),
        "tests/test.sh": TEST_SH.encode(),
        **{f"tests/{rel}": data for rel, data in verifier_files(task, ids).items()},
    }
    patch = task.oracle_patch
    if patch.strip():
        files["solution/solve.sh"] = solve_sh(patch).encode()
    return files


def verifier_files(task: Task, ids: dict[str, list[str]]) -> dict[str, bytes]:
    """The default-fail verifier of `task` (verify.py, the grading rules it imports, the answer key),
    relative path -> bytes; `ids` are the full node ids per test group. It grades a repo at
    SDEBENCH_APP (default /app), so any harness that runs it after the agent is gone can use it."""
    with tempfile.TemporaryDirectory(prefix="sdebench-harbor-") as tmp:
        tree = repo_mod.read_tree(repo_mod.unbundle(task.bundle, Path(tmp) / "repo"))
    declared = tuple(task.test_files)
    files: dict[str, bytes] = {
        "verify.py": (Path(__file__).with_name("harbor_verify.py")).read_bytes(),
        "_runner.py": runner_source().encode(),
        # The grading rules themselves, not a copy of them: the verifier imports these.
        "rules.py": Path(rules.__file__).read_bytes(),
        "records.py": Path(records.__file__).read_bytes(),
        "artifacts.py": Path(artifacts.__file__).read_bytes(),
    }
    for rel, content in tree.items():
        files[f"pristine/{rel}"] = content.encode()
    for rel, content in task.hidden_files().items():
        files[f"hidden/{rel}"] = content.encode()
    for rel, content in task.observed_files().items():
        files[f"observed/{rel}"] = content.encode()
    sources = {
        rel: hashlib.sha256(content.encode()).hexdigest()
        for rel, content in tree.items()
        if rules.is_source(rel, declared)
    }
    expected = {
        "task_id": task.id,
        "tests": ids,
        "test_files": list(declared),
        "sources": sources,
        "timeout": VERIFY_TIMEOUT,
        "test_time_limit_s": task.test_time_limit_s or 10.0,
        "observations": task.expected_observations(),
    }
    files["expected.json"] = (json.dumps(expected, indent=1, sort_keys=True) + "\n").encode()
    return files


def write_dir(files: dict[str, bytes], dest: Path) -> None:
    """Write `files` as a fresh dir `dest` (scripts executable)."""
    if dest.exists():
        shutil.rmtree(dest)
    for rel, data in sorted(files.items()):
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if rel.endswith(".sh"):
            p.chmod(0o755)


def export_task(task: Task, out_dir: Path, factory: SandboxFactory | None = None,
                base_image: str = container.DEFAULT_BASE_IMAGE) -> Path:
    """Write the Harbor task dir of `task` as `out_dir/<task id>`."""
    files = harbor_files(task, factory, base_image)
    dest = Path(out_dir) / task.id
    write_dir(files, dest)
    return dest
