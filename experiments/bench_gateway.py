"""The model gateway's overhead per model call, on loopback, for each protocol, streamed or not.

The client sends the same request (a 20-message conversation with tools) straight to the scripted
test model (its own process, as a real model server is) and through the gateway (which decodes it,
admits it, calls litellm on the test model, accounts the reply, logs it and re-encodes it),
alternating, so both sides see the machine alike. Each sample subtracts the model's own reply time
as the test server measured it (`server_s`). Overhead = the median over the pairs of (through the
gateway - straight to the model, the call before it), with its 90th percentile and maximum: what an
agent pays for the gateway, litellm's client included. Target: under 5 ms median. Two parts are also shown: `upstream` (the call through litellm's
provider mapping to the model as the gateway timed it, the model's own time included) and `own code`
(decoding, metering, encoding, logging: the gateway's time outside that call). `cpu` is the CPU
time the gateway adds per call (this process's CPU per call through it minus straight to the
model): it moves less with the machine's load than the wall-clock figures.

The test model is an OpenAI-compatible entry, so the gateway takes its direct route (litellm's
provider config over the gateway's own HTTP session); `--route completion` measures the same calls
through `litellm.completion`, the route every other provider takes, and `--upstream anthropic`
makes the entry an Anthropic one at the same address (the test model's Messages API; the
Anthropic direct route). The machine's load average is
printed: on a shared machine the figures move with it.

    PYTHONPATH=$PWD python experiments/bench_gateway.py [--calls 200] [--route auto|completion]
                                                  [--upstream openai|anthropic]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from sdebench.agents.accounting import import_litellm, resolve_pricing
from sdebench.agents.base import Limits
from sdebench.agents.model import ModelSettings
from sdebench.gateway.server import make_gateway
from sdebench.testing import testmodel

PRICES = {"input": 3.0, "output": 15.0}
STEP = {"tool": "tool_1", "arguments": {"command": "ls -la"}, "repeat": True,
        "usage": {"prompt_tokens": 3000, "completion_tokens": 40, "cached_tokens": 1000}}
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def conversation(protocol: str, stream: bool) -> tuple[str, dict]:
    """A request of realistic shape: system prompt, 20 turns with tool results, 8 tools."""
    tools = [(f"tool_{i}", "A tool that does one thing. " * 20) for i in range(8)]
    turns = [("user" if i % 2 == 0 else "assistant", f"step {i}: " + "some context text " * 40) for i in range(20)]
    if protocol == "anthropic":
        return "/v1/messages", {"model": "m", "max_tokens": 1000, "stream": stream, "system": "You fix bugs. " * 50,
                                "messages": [{"role": r, "content": t} for r, t in turns] + [{"role": "user", "content": "go"}],
                                "tools": [{"name": n, "description": d, "input_schema": SCHEMA} for n, d in tools]}
    if protocol == "gemini":
        path = "/v1beta/models/m:streamGenerateContent?alt=sse" if stream else "/v1beta/models/m:generateContent"
        return path, {"systemInstruction": {"parts": [{"text": "You fix bugs. " * 50}]},
                      "contents": [{"role": "user" if r == "user" else "model", "parts": [{"text": t}]} for r, t in turns]
                      + [{"role": "user", "parts": [{"text": "go"}]}],
                      "tools": [{"functionDeclarations": [{"name": n, "description": d, "parametersJsonSchema": SCHEMA}
                                                          for n, d in tools]}]}
    if protocol == "responses":
        return "/v1/responses", {"model": "m", "stream": stream, "instructions": "You fix bugs. " * 50,
                                 "input": [{"type": "message", "role": r, "content": t} for r, t in turns] + ["go"][:0]
                                 + [{"type": "message", "role": "user", "content": "go"}],
                                 "tools": [{"type": "function", "name": n, "description": d, "parameters": SCHEMA} for n, d in tools]}
    return "/v1/chat/completions", {"model": "m", "stream": stream,
                                    "messages": [{"role": "system", "content": "You fix bugs. " * 50}]
                                    + [{"role": r, "content": t} for r, t in turns] + [{"role": "user", "content": "go"}],
                                    "tools": [{"type": "function", "function": {"name": n, "description": d, "parameters": SCHEMA}}
                                              for n, d in tools]}


def paired(direct: httpx.Client, via: httpx.Client, path: str, body: dict, model: httpx.Client, n: int,
           headers: dict) -> tuple[list[float], list[float], float, float]:
    """`n` calls straight to the model and `n` through the gateway, alternating, so a machine that
    speeds up or slows down during the run moves both sides alike: the client-side seconds of each
    call minus the model server's own time (each call makes one model request), and this process's
    CPU seconds per call on each side (client and gateway; the model runs apart)."""
    model.post("/script", json=[STEP]).raise_for_status()  # clears the server's record
    took: tuple[list[float], list[float]] = ([], [])
    cpu = [0.0, 0.0]
    for _ in range(n):
        for side, (client, h) in enumerate(((direct, {}), (via, headers))):
            c0, t0 = time.process_time(), time.perf_counter()
            r = client.post(path, json=body, headers=h)
            r.read()
            took[side].append(time.perf_counter() - t0)
            cpu[side] += time.process_time() - c0
            assert r.status_code == 200, r.text[:300]
    served = [x.get("server_s", 0.0) for x in model.get("/requests").json()]
    assert len(served) == 2 * n, (len(served), n)
    d = [t - s for t, s in zip(took[0], served[0::2], strict=True)]
    g = [t - s for t, s in zip(took[1], served[1::2], strict=True)]
    return d, g, cpu[0] / n, cpu[1] / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--route", default="auto", choices=("auto", "direct", "completion"))
    ap.add_argument("--upstream", default="openai", choices=("openai", "anthropic"),
                    help="the model entry's protocol (litellm provider) in front of the test model")
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import_litellm()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"gateway overhead per model call, {args.calls} calls each (median / p90 / max, ms); route {args.route}, upstream {args.upstream}; "
          f"load average {load} on {os.cpu_count()} cores")
    print(f"{'agent protocol':20} {'direct':>8} {'gateway':>8} {'overhead':>9} {'p90':>7} {'max':>7} {'upstream':>8} {'own code':>9} {'cpu':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps([STEP]))
        with testmodel.subprocess_server(script) as base:
            results = run_all(base, args.calls, args.route, args.upstream)
    worst = max(results)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"worst median overhead: {worst * 1e3:.2f} ms (target < 5 ms): {'OK' if worst < 0.005 else 'ABOVE TARGET'}"
          f"; load average at the end {load}")


def run_all(base: str, calls: int, route: str, upstream: str = "openai") -> list[float]:
    """Print one row per protocol and stream mode; the median overheads."""
    results = []
    # the model's own record (to subtract its time) and script resets go over a client of their own
    with httpx.Client(base_url=base.removesuffix("/v1"), timeout=30) as srv:
        for protocol, stream in (("anthropic", True), ("anthropic", False), ("chat", False), ("chat", True),
                                 ("responses", True), ("responses", False), ("gemini", True), ("gemini", False)):
            events: list[dict] = []
            entry = ({"litellm_model": "anthropic/testmodel", "api_base": base.removesuffix("/v1")} if upstream == "anthropic"
                     else {"litellm_model": "openai/testmodel", "api_base": base})
            model = ModelSettings.from_config({"name": "bench", **entry, "prices": PRICES})
            gw = make_gateway(model, resolve_pricing(model.litellm_model, model.prices), Limits(max_turns=10**9, max_cost_usd=1e9),
                              time.monotonic(), lambda kind, _ev=events, **d: _ev.append(d) if kind == "model_call" else None,
                              route=route)
            gw.start(tcp=True)
            try:
                path, body = conversation(protocol, stream)
                # agents' HTTP clients send with TCP_NODELAY (else Nagle + delayed ACK add ~40 ms to every request)
                nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
                with httpx.Client(base_url=base.removesuffix("/v1"), timeout=30,
                                  transport=httpx.HTTPTransport(socket_options=nodelay)) as direct, \
                        httpx.Client(base_url=gw.base_url, timeout=30,
                                     transport=httpx.HTTPTransport(socket_options=nodelay)) as via:
                    auth = {"Authorization": f"Bearer {gw.token}", "x-api-key": gw.token, "x-goog-api-key": gw.token}
                    paired(direct, via, path, body, srv, 10, auth)  # warm-up: connections, litellm's first call
                    d, g, d_cpu, g_cpu = paired(direct, via, path, body, srv, calls, auth)
            finally:
                gw.stop()
            d_med, g_med = statistics.median(d), statistics.median(g)
            over = [y - x for x, y in zip(d, g, strict=True)]  # each gateway call against the direct call beside it
            inside = statistics.median(e["gateway_s"] for e in events[10:]) if len(events) > 10 else float("nan")
            upstream_s = statistics.median(e["latency_s"] for e in events[10:]) if len(events) > 10 else float("nan")
            label = f"{protocol} {'stream' if stream else 'json'}"
            p90 = statistics.quantiles(over, n=10)[-1]
            print(f"{label:20} {d_med * 1e3:8.2f} {g_med * 1e3:8.2f} {statistics.median(over) * 1e3:9.2f} "
                  f"{p90 * 1e3:7.2f} {max(over) * 1e3:7.2f} {upstream_s * 1e3:8.2f} {inside * 1e3:9.2f} {(g_cpu - d_cpu) * 1e3:8.2f}")
            results.append(statistics.median(over))
    return results


if __name__ == "__main__":
    main()
