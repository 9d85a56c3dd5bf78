"""Harness overhead per agent turn of the LLM agent, against the scripted test model server.

One episode = the real LLM agent, the real toolbox on a real sandbox over a squashed workspace of a
committed task, the real trajectory file, and litellm over HTTP to `sdebench.testing.testmodel` (a
subprocess). Every turn reads a source file of the task.

Overhead of a turn = its wall time minus the model's reply time (as the server measured it) minus
the time the sandbox spent running the tool's commands. What remains is litellm building and
parsing the request, the HTTP round trip on 127.0.0.1, accounting, history bookkeeping, the
toolbox's own checks and the trajectory writes. Target: median under 20 ms.

    PYTHONPATH=$PWD python experiments/bench_agent.py [--turns 30] [--episodes 3] [--backend unsafe_local]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from sdebench.agents.base import AgentContext, Limits, ToolResult
from sdebench.agents.llm import LLMAgent
from sdebench.agents.tools import Toolbox
from sdebench.agents.trajectory import Trajectory, TrajectoryView, read
from sdebench.components import build_delivery
from sdebench.sandbox import make_factory
from sdebench.tasks.record import Task, load
from sdebench.testing import testmodel

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "SDEBENCH_TESTMODEL_KEY"


class TimedSandbox:
    """Passes every call to a sandbox, adding up the time its commands and file operations take."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.spent = 0.0
        self.cpu = 0.0  # this process's CPU time inside sandbox calls (spawning, waiting, copying)

    def _timed(self, method: str, *args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return getattr(self.inner, method)(*args, **kwargs)
        finally:
            self.spent += time.perf_counter() - t0
            self.cpu += time.process_time() - c0

    def exec(self, *args: Any, **kwargs: Any) -> Any:
        """Run a command in the sandbox (timed)."""
        return self._timed("exec", *args, **kwargs)

    def read_file(self, *args: Any, **kwargs: Any) -> Any:
        """Read a workspace file (timed)."""
        return self._timed("read_file", *args, **kwargs)

    def write_file(self, *args: Any, **kwargs: Any) -> Any:
        """Write a workspace file (timed)."""
        return self._timed("write_file", *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class SpanToolbox:
    """The real toolbox, recording when each call ran and how long its sandbox work took."""

    def __init__(self, inner: Toolbox, sandbox: TimedSandbox):
        self.inner = inner
        self.sandbox = sandbox
        self.logs_calls = inner.trajectory is not None  # as the real toolbox's view says
        self.spans: list[tuple[float, float, float, float, float]] = []  # start, end, sandbox s, CPU at end, sandbox CPU

    def names(self) -> list[str]:
        """Tool names."""
        return self.inner.names()

    def schemas(self) -> list[dict[str, Any]]:
        """Tool schemas."""
        return self.inner.schemas()

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the real tool, timing it."""
        before, cpu_before = self.sandbox.spent, self.sandbox.cpu
        t0 = time.monotonic()
        result = self.inner.call(name, arguments)
        self.spans.append((t0, time.monotonic(), self.sandbox.spent - before, time.process_time(),
                           self.sandbox.cpu - cpu_before))
        return result


def _script(files: list[str], turns: int) -> list[dict[str, Any]]:
    usage = {"prompt_tokens": 2000, "completion_tokens": 40, "cached_tokens": 1500}
    steps = [{"tool": "read_file", "arguments": {"path": files[i % len(files)]}, "usage": usage} for i in range(turns - 1)]
    return [*steps, {"tool": "submit", "arguments": {}, "usage": usage}]


def _post(url: str, body: Any) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def episode(base: str, cfg: dict[str, Any], task: Task, factory: Any, turns: int, tmp: Path) -> list[dict[str, float]]:
    """Run one scripted episode; per-turn wall, server, tool and overhead times in seconds."""
    work = Path(tempfile.mkdtemp(dir=tmp))
    prepared = build_delivery({"name": "squashed"}).prepare(task, work)
    files = sorted(p.relative_to(prepared.workspace).as_posix() for p in prepared.workspace.rglob("*.py")
                   if ".git" not in p.parts)
    root = base.removesuffix("/v1")
    _post(f"{root}/script", _script(files, turns))
    traj_path = work / "traj.jsonl"
    traj = Trajectory(traj_path)
    sandbox = TimedSandbox(factory.open(prepared.workspace))
    visible = (*task.tests.fail_to_pass, *task.tests.pass_to_pass)
    toolbox = SpanToolbox(Toolbox(sandbox, prepared.tools, prepared.memory, traj, visible_tests=visible), sandbox)
    agent = LLMAgent.from_config(cfg)
    ctx = AgentContext(statement=task.statement, prompt_additions=prepared.prompt_additions, toolbox=toolbox,
                       trajectory=TrajectoryView(traj), limits=Limits(max_turns=turns + 5), started_at=time.monotonic())
    agent.start(ctx)
    t_start, cpu_start = time.monotonic(), time.process_time()
    try:
        res = agent.run()
    finally:
        sandbox.close()
    if res.stop_reason != "submitted":
        raise SystemExit(f"bench episode ended with {res.stop_reason}: {res.error}")
    with urllib.request.urlopen(f"{root}/requests") as r:
        server = [q["server_s"] for q in json.loads(r.read())]
    latency = [e["latency_s"] for e in read(traj_path) if e["kind"] == "model_call"]
    if not len(server) == len(latency) == len(toolbox.spans) == turns:
        raise SystemExit(f"expected {turns} requests, replies and tool calls; got {len(server)}, {len(latency)}, "
                         f"{len(toolbox.spans)}")
    out, prev, prev_cpu = [], t_start, cpu_start
    for (t0, t1, box, cpu, box_cpu), s, lat in zip(toolbox.spans, server, latency, strict=True):
        wall = t1 - prev
        out.append({"wall": wall, "server": s, "command": box, "overhead": wall - s - box,
                    "client": lat - s, "toolbox": (t1 - t0) - box, "agent": wall - lat - (t1 - t0),
                    "cpu": cpu - prev_cpu - box_cpu})
        prev, prev_cpu = t1, cpu
    return out


def main() -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=30, help="turns per episode")
    ap.add_argument("--episodes", type=int, default=3, help="measured episodes (after one warm-up)")
    ap.add_argument("--task", default="billing-rounding-v0-K", help="a task id under tasks/")
    ap.add_argument("--backend", default="unsafe_local", help="sandbox backend: unsafe_local, local, docker")
    args = ap.parse_args()
    os.environ.setdefault(KEY_ENV, "sk-bench-not-a-real-key")
    task = load(ROOT / "tasks" / args.task)
    cfg = {
        "agent": yaml.safe_load((ROOT / "conf/agent/llm.yaml").read_text()),
        "model": yaml.safe_load((ROOT / "conf/model/testmodel.yaml").read_text()),
        "limits": {},
    }
    factory = make_factory({"backend": args.backend})
    try:
        with tempfile.TemporaryDirectory() as d, tempfile.NamedTemporaryFile("w", suffix=".json") as script:
            json.dump([], script)
            script.flush()
            with testmodel.subprocess_server(Path(script.name)) as base:
                cfg["model"]["api_base"] = base
                t_warm = time.monotonic()
                episode(base, cfg, task, factory, 2, Path(d))  # warm-up: imports litellm, opens the connection
                warm = time.monotonic() - t_warm
                turns: list[dict[str, float]] = []
                for _ in range(args.episodes):
                    turns += episode(base, cfg, task, factory, args.turns, Path(d))
    finally:
        factory.cleanup()
    ms = {k: sorted(1000 * t[k] for t in turns) for k in turns[0]}

    def med(k: str) -> float:
        return statistics.median(ms[k])

    def q(k: str, p: float) -> float:
        return ms[k][min(int(p * len(ms[k])), len(ms[k]) - 1)]

    print(f"LLM agent harness overhead per turn: {len(turns)} turns = {args.episodes} episodes x {args.turns} "
          f"on {args.task}, sandbox {args.backend}")
    print(f"  median  {med('overhead'):7.2f} ms   (target < 20 ms)")
    print(f"  p90     {q('overhead', 0.9):7.2f} ms")
    print(f"  max     {max(ms['overhead']):7.2f} ms")
    print(f"  split (medians): litellm call + HTTP on 127.0.0.1 {med('client'):.2f} ms, toolbox around its commands "
          f"{med('toolbox'):.2f} ms, agent (accounting, history, trajectory writes) {med('agent'):.2f} ms")
    print(f"  harness CPU time per turn (this process, threads included, sandbox calls excluded; little affected "
          f"by other load on the machine): median {med('cpu'):.2f} ms, p90 {q('cpu', 0.9):.2f} ms")
    print(f"  excluded (medians): model reply at the server {med('server'):.2f} ms, sandbox commands {med('command'):.2f} ms")
    print(f"  warm-up episode (litellm import, first connection): {warm:.2f} s")
    print(f"  load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
