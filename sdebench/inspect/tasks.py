"""The Inspect `Task` over sdebench tasks: dataset, delivery setup, agent, host-side scorer."""

from __future__ import annotations

import io
import itertools
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, basic_agent, solver
from inspect_ai.tool import Tool, bash, tool
from inspect_ai.util import SandboxEnvironmentSpec, sandbox, store

from sdebench.components import build_delivery
from sdebench.delivery.memory import format_hits
from sdebench.grading.grade import grade
from sdebench.runs.record import DEFAULT_MAX_INTERVENTIONS
from sdebench.sandbox import make_factory
from sdebench.tasks import record as task_mod
from sdebench.tasks.selection import select

WORKDIR = "repo"  # relative to the sandbox's working directory
ARCHIVE = ".sdebench-workspace.tar"
DEFAULT_ATTEMPTS = 1 + DEFAULT_MAX_INTERVENTIONS  # the first submission plus the interventions of the design
_RUNS = itertools.count()
_MEMORY: dict[str, Any] = {}  # sample uuid -> MemoryIndex of a memtool delivery (host side, never in the sandbox)


def samples(tasks_dir: Path, delivery: str, **filters: Any) -> list[Sample]:
    """One Sample per selected task: the statement as input, the task's identity as metadata."""
    out = []
    for t in select(tasks_dir, **filters):
        meta = {"task_id": t.id, "family": t.family, "variant": t.variant, "source": t.source,
                "bottleneck": t.bottleneck, "competency": t.competency, "tier": t.tier, "delivery": delivery,
                "tags": list(t.tags)}
        text = f"{t.statement.rstrip()}\n\nThe repository is checked out in ./{WORKDIR}. Fix the bug there, then submit."
        out.append(Sample(input=text, id=t.id, metadata=meta))
    if not out:
        raise ValueError(f"no sdebench task in {tasks_dir} matches {filters}")
    return out


def _tar(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(root, arcname=".")
    return buf.getvalue()


@solver
def delivery_setup(tasks_dir: str, delivery: str) -> Solver:
    """Prepare the sample's workspace with the delivery on the host and copy it into the sandbox."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        t = task_mod.load(Path(tasks_dir) / state.metadata["task_id"])
        with tempfile.TemporaryDirectory(prefix="sdebench-inspect-") as tmp:
            prep = build_delivery({"name": delivery}).prepare(t, Path(tmp))
            data = _tar(prep.workspace)
        box = sandbox()
        await box.write_file(ARCHIVE, data)
        r = await box.exec(["sh", "-c", f"mkdir -p {WORKDIR} && tar -xf {ARCHIVE} -C {WORKDIR} && rm -f {ARCHIVE}"])
        if not r.success:
            raise RuntimeError(f"could not unpack the workspace in the sandbox: {r.stderr.strip()}")
        if prep.prompt_additions:
            state.user_prompt.text = state.user_prompt.text + "\n\n" + "\n\n".join(prep.prompt_additions)
        if prep.memory is not None:
            _MEMORY[str(state.uuid)] = prep.memory
            state.tools.append(memory_search_tool(str(state.uuid)))
        return state

    return solve


@tool(name="memory_search")
def memory_search_tool(key: str) -> Tool:
    """BM25 search over the project's memory (history, docs, notes), run on the host."""

    async def execute(query: str, k: int = 5) -> str:
        """Search the project's memory: commit history, docs, ADRs, agent notes.

        Args:
            query: What to look for (keywords).
            k: How many results to return.
        """
        index = _MEMORY.get(key)
        return "The memory index is gone." if index is None else format_hits(index.search(query, int(k)))

    return execute


async def _workspace_out(dest: Path) -> Path:
    """Copy the sandbox's workspace into `dest` (host), safely."""
    box = sandbox()
    r = await box.exec(["tar", "-cf", ARCHIVE, "-C", WORKDIR, "."])
    if not r.success:
        raise RuntimeError(f"could not archive the workspace in the sandbox: {r.stderr.strip()}")
    data = await box.read_file(ARCHIVE, text=False)
    await box.exec(["rm", "-f", ARCHIVE])
    ws = dest / "workspace"
    ws.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        tf.extractall(ws, filter="data")  # no links out, no absolute paths, no devices
    return ws


@scorer(metrics=[mean()])
def sdebench_scorer(tasks_dir: str, grader_sandbox: str = "local", grade_options: dict[str, Any] | None = None):
    """Grade the sandbox's workspace on the host with sdebench's grader (hidden tests stay on the host)."""
    factory = make_factory({"backend": grader_sandbox, "tasks_dir": str(Path(tasks_dir).resolve())})

    async def score(state: TaskState, target: Target) -> Score:
        t = task_mod.load(Path(tasks_dir) / state.metadata["task_id"])
        tmp = Path(tempfile.mkdtemp(prefix="sdebench-inspect-grade-"))
        try:
            ws = await _workspace_out(tmp)
            g = grade(t, ws, factory, **(grade_options or {}))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if g.error:
            # A grade that could not run is an error of the sample, never an unresolved outcome.
            raise RuntimeError(f"grading failed: {g.error}")
        return Score(
            value=1.0 if g.resolved else 0.0,
            explanation=g.feedback,
            metadata={"resolved": g.resolved, "counts": g.counts, "pass_ratio": g.pass_ratio, "guards": g.guards,
                      "reward": g.reward, "interventions": store().get("sdebench_interventions", 0)},
        )

    return score


def feedback_message(state: TaskState, scores: list[Score]) -> str:
    """The next user message after a failing grade: the grader's feedback (one intervention)."""
    store().set("sdebench_interventions", store().get("sdebench_interventions", 0) + 1)
    text = (scores[0].explanation or "").strip() if scores else ""
    return "Your fix was graded and is not accepted yet.\n\n" + (text or "The tests fail.") + "\n\nKeep working, then submit again."


def _sandbox_spec(kind: str, image: str) -> SandboxEnvironmentSpec | str:
    """Inspect's sandbox: `local` as is, `docker` from a compose file for `image` without network."""
    if kind != "docker":
        return kind
    d = Path(tempfile.gettempdir()) / "sdebench-inspect"
    d.mkdir(exist_ok=True)
    compose = d / f"compose-{abs(hash(image))}.yaml"
    compose.write_text(
        "services:\n  default:\n"
        f"    image: {image}\n    command: tail -f /dev/null\n    init: true\n    network_mode: none\n"
        "    working_dir: /work\n"
    )
    return SandboxEnvironmentSpec("docker", str(compose))


def _from_shell_cwd(path: str) -> Path:
    """`path` resolved against the directory `inspect eval` was started in (Inspect changes into the
    task file's directory while it loads the task; the shell's PWD still names the original one)."""
    p = Path(path)
    return p.resolve() if p.is_absolute() else (Path(os.environ.get("PWD") or os.getcwd()) / p).resolve()


def sdebench_task(
    tasks_dir: str = "tasks",
    delivery: str = "squashed",
    source: str | None = None,
    family: str | None = None,
    variant: str | None = None,
    ids: str | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    sandbox_kind: str = "docker",
    image: str = "python:3.12-slim-bookworm",
    grader_sandbox: str = "local",
    grade_options: dict[str, Any] | None = None,
    message_limit: int = 60,
) -> Task:
    """The Inspect Task (see the package docstring)."""
    tasks_dir = str(_from_shell_cwd(tasks_dir))
    build_delivery({"name": delivery})  # an unknown delivery fails here, before any sample runs
    dataset = MemoryDataset(samples(Path(tasks_dir), delivery, source=source, family=family, variant=variant, ids=ids),
                            name=f"sdebench-{delivery}-{next(_RUNS)}")
    return Task(
        dataset=dataset,
        setup=delivery_setup(tasks_dir, delivery),
        solver=basic_agent(tools=[bash(timeout=180)], max_attempts=int(attempts), message_limit=message_limit,
                           incorrect_message=feedback_message),
        scorer=sdebench_scorer(tasks_dir, grader_sandbox, grade_options),
        sandbox=_sandbox_spec(sandbox_kind, image),
    )


@task
def sdebench(
    tasks_dir: str = "tasks",
    delivery: str = "squashed",
    source: str | None = None,
    family: str | None = None,
    variant: str | None = None,
    ids: str | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    sandbox: str = "docker",
    image: str = "python:3.12-slim-bookworm",
    grader_sandbox: str = "local",
) -> Task:
    """sdebench for `inspect eval` (-T key=value sets each argument)."""
    return sdebench_task(tasks_dir, delivery, source, family, variant, ids, attempts, sandbox, image, grader_sandbox)
