"""Full pytest node ids of a task's test groups, collected on the oracle-patched repo.

A task may list a parametrized test without its parameters (`tests/t.py::test_x`, meaning every
instance); SWE-bench, Harbor and other harnesses match node ids exactly, so exports list every
instance (`tests/t.py::test_x[a]`, ...). The ids come from a real pytest run of the repo with
`oracle.patch` applied and the hidden tests added, in a sandbox; an id that matches nothing, or a
test of the oracle run that does not pass, stops the export of that task.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from sdebench.errors import InteropError
from sdebench.grading.testrun import run_tests
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import Task

DEFAULT_TIMEOUT = 300.0


class NodeIdError(InteropError, ValueError):
    """The task's ids cannot be expanded (the message says why)."""


def expand(declared: list[str], reported: list[str]) -> dict[str, list[str]]:
    """Each declared id -> the reported node ids it covers (itself, or its `[...]` instances)."""
    out: dict[str, list[str]] = {}
    for i in declared:
        if i in reported:
            out[i] = [i]
        else:
            out[i] = sorted(r for r in reported if r.startswith(i + "["))
    return out


def full_ids(task: Task, factory: SandboxFactory, timeout: float = DEFAULT_TIMEOUT) -> dict[str, list[str]]:
    """Group -> full node ids (sorted, unique) for `task`, from one pytest run of its oracle fix."""
    groups = {g: list(ids) for g, ids in task.tests.groups().items()}
    declared = [i for ids in groups.values() for i in ids]
    if not declared:
        raise NodeIdError("the task declares no test ids")
    tmp = Path(tempfile.mkdtemp(prefix="sdebench-nodeids-"))
    try:
        ws = repo_mod.unbundle(task.bundle, tmp / "repo")
        repo_mod.apply_patch(ws, task.oracle_patch)
        for rel, content in task.hidden_files().items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(content)
        shutil.rmtree(ws / ".git")
        paths = sorted({i.split("::")[0] for i in declared})
        with factory.open(ws, read_only=True) as box:
            run = run_tests(box, paths, timeout=timeout)
    except repo_mod.RepoError as e:
        raise NodeIdError(f"cannot check out the oracle fix: {e}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if run.error:
        raise NodeIdError(f"the oracle run failed: {run.error}")
    reported = sorted(run.tests)
    mapping = expand(declared, reported)
    empty = [i for i, ids in mapping.items() if not ids]
    if empty:
        raise NodeIdError(f"{len(empty)} declared id(s) match no test of the oracle run, e.g. {empty[0]}")
    failing = sorted({r for ids in mapping.values() for r in ids if not run.tests[r].passed})
    if failing:
        raise NodeIdError(f"the oracle fix does not pass {failing[0]} ({run.tests[failing[0]].outcome})")
    return {g: sorted({r for i in ids for r in mapping[i]}) for g, ids in groups.items()}
