"""Harness overhead per agent turn of the LLM agent, against the scripted test model server.

Overhead of a turn = its wall time minus the model's reply time (as the server measured it) minus
the time its tool call ran. What remains is litellm building and parsing the request, the HTTP
round trip on 127.0.0.1, accounting, history bookkeeping and the fsynced trajectory writes.
Target: median under 20 ms.

    PYTHONPATH=$PWD python experiments/bench_agent.py [--turns 30] [--episodes 3] [--file-kb 4]
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

from sdebench import testmodel
from sdebench.agents.base import AgentContext, Limits, ToolResult
from sdebench.agents.llm import LLMAgent
from sdebench.task import Task, Tests
from sdebench.trajectory import Trajectory, read

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "SDEBENCH_TESTMODEL_KEY"


class TimedToolbox:
    """Answers every call at once with a fixed file body, recording when each call ran."""

    def __init__(self, body: str):
        self.body = body
        self.spans: list[tuple[float, float]] = []

    def names(self) -> list[str]:
        """The two tools the script uses."""
        return ["read_file", "submit"]

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas."""
        params = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        return [
            {"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": params}},
            {"type": "function", "function": {"name": "submit", "description": "Submit.",
                                              "parameters": {"type": "object", "properties": {}}}},
        ]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Return the fixed body (or submit), timing the call."""
        t0 = time.monotonic()
        result = ToolResult(name, "submitted" if name == "submit" else self.body, submitted=name == "submit")
        self.spans.append((t0, time.monotonic()))
        return result


def _task() -> Task:
    return Task(id="bench-v0-0", family="bench", variant=0, source="K", bottleneck="knowledge-missing",
                statement="bench", fact="f", fact_tokens=("f",), conventional_guess="g", modules=1, commits=1,
                head_sha="0" * 40, tests=Tests(("t",), (), ()), memory_artifacts=(), test_files=())


def _script(turns: int) -> list[dict[str, Any]]:
    usage = {"prompt_tokens": 2000, "completion_tokens": 40, "cached_tokens": 1500}
    steps = [{"tool": "read_file", "arguments": {"path": f"pkg/mod{i}.py"}, "usage": usage} for i in range(turns - 1)]
    return [*steps, {"tool": "submit", "arguments": {}, "usage": usage}]


def _post(url: str, body: Any) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def episode(base: str, cfg: dict[str, Any], turns: int, body: str, tmp: Path) -> list[dict[str, float]]:
    """Run one scripted episode; per-turn wall, server, tool and overhead times in seconds."""
    root = base.removesuffix("/v1")
    _post(f"{root}/script", _script(turns))
    agent = LLMAgent.from_config(cfg)
    toolbox = TimedToolbox(body)
    ctx = AgentContext(task=_task(), statement="The totals are off by one cent.", prompt_additions=[],
                       toolbox=toolbox, trajectory=Trajectory(tmp / "traj.jsonl"), limits=Limits(max_turns=turns + 5),
                       started_at=time.monotonic())
    agent.start(ctx)
    t_start = time.monotonic()
    res = agent.run()
    if res.stop_reason != "submitted":
        raise SystemExit(f"bench episode ended with {res.stop_reason}: {res.error}")
    with urllib.request.urlopen(f"{root}/requests") as r:
        server = [q["server_s"] for q in json.loads(r.read())]
    if len(server) != turns or len(toolbox.spans) != turns:
        raise SystemExit(f"expected {turns} requests and tool calls, got {len(server)} and {len(toolbox.spans)}")
    latency = [e["latency_s"] for e in read(tmp / "traj.jsonl") if e["kind"] == "model_call"]
    out, prev = [], t_start
    for (t0, t1), s, lat in zip(toolbox.spans, server, latency, strict=True):
        wall, tool = t1 - prev, t1 - t0
        out.append({"wall": wall, "server": s, "tool": tool, "overhead": wall - s - tool,
                    "client": lat - s, "agent": wall - lat - tool})
        prev = t1
    return out


def main() -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=30, help="turns per episode")
    ap.add_argument("--episodes", type=int, default=3, help="measured episodes (after one warm-up)")
    ap.add_argument("--file-kb", type=float, default=4.0, help="size of each tool output, KB")
    args = ap.parse_args()
    os.environ.setdefault(KEY_ENV, "sk-bench-not-a-real-key")
    cfg = {
        "agent": yaml.safe_load((ROOT / "conf/agent/llm.yaml").read_text()),
        "model": yaml.safe_load((ROOT / "conf/model/testmodel.yaml").read_text()),
        "limits": {},
    }
    body = ("x = 1  # filler line of a source file\n" * int(args.file_kb * 1024 / 37 + 1))[: int(args.file_kb * 1024)]
    with tempfile.TemporaryDirectory() as d, tempfile.NamedTemporaryFile("w", suffix=".json") as script:
        json.dump(_script(2), script)
        script.flush()
        with testmodel.subprocess_server(Path(script.name)) as base:
            cfg["model"]["api_base"] = base
            t_import = time.monotonic()
            episode(base, cfg, 2, body, Path(d))  # warm-up: imports litellm, opens the connection pool
            warm = time.monotonic() - t_import
            turns: list[dict[str, float]] = []
            for _ in range(args.episodes):
                turns += episode(base, cfg, args.turns, body, Path(d))
    ms = {k: sorted(1000 * t[k] for t in turns) for k in turns[0]}

    def q(k: str, p: float) -> float:
        return ms[k][min(int(p * len(ms[k])), len(ms[k]) - 1)]

    print(f"LLM agent harness overhead per turn ({len(turns)} turns = {args.episodes} episodes x {args.turns}, "
          f"{args.file_kb:g} KB tool outputs, history growing to ~{args.turns * args.file_kb:.0f} KB)")
    print(f"  median  {statistics.median(ms['overhead']):7.2f} ms   (target < 20 ms)")
    print(f"  p90     {q('overhead', 0.9):7.2f} ms")
    print(f"  max     {max(ms['overhead']):7.2f} ms")
    print(f"  first / last turn of an episode: {1000 * turns[0]['overhead']:.2f} / {1000 * turns[-1]['overhead']:.2f} ms")
    print(f"  split: litellm call incl. HTTP on 127.0.0.1, minus server time: median {statistics.median(ms['client']):.2f} ms; "
          f"agent (accounting, history, trajectory fsyncs): median {statistics.median(ms['agent']):.2f} ms")
    print(f"  model reply time at the server: median {statistics.median(ms['server']):.2f} ms; "
          f"tool time: median {statistics.median(ms['tool']):.3f} ms")
    print(f"  warm-up episode (litellm import, first connection): {warm:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
