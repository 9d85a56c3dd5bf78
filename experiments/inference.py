"""Baseline: an LLM (through litellm) fixes tasks by driving the environment server over HTTP.

    python -m sdebench.serve --port 8000 &
    python experiments/inference.py --server http://127.0.0.1:8000 --model openai/NAME \
        --api-base http://HOST/v1 [--tasks ID,ID | --limit N] [--max-steps N] [--out runs.jsonl]

Each turn the model sees the task description, the current code and the failing-tests summary,
and answers with a `submit_fix` tool call (a full file or a unified diff); the server grades it
and the next observation goes back as the tool result, until done. One JSON line per task is
printed (and appended to --out): steps, rewards, whether every test passes, tokens, cost.
MODEL_NAME, API_BASE_URL and API_KEY are read when the flags are absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

SYSTEM = (
    "You fix bugs in Python code. Each turn you get the bug report, the current content of the files the "
    "fix belongs in, and the status of the test suite (some tests are hidden; only their count is shown). "
    "Answer with exactly one submit_fix call: either the complete new content of one file (patched_code, "
    "with path) or a unified diff (diff). You will see the new test status after each submission."
)
SUBMIT_TOOL = {
    "type": "function",
    "function": {
        "name": "submit_fix",
        "description": "Submit a fix: the full new content of one file, or a unified diff.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "repo-relative path of the file patched_code replaces"},
                "patched_code": {"type": "string", "description": "the complete new content of the file"},
                "diff": {"type": "string", "description": "a unified diff (instead of patched_code)"},
            },
        },
    },
}
MAX_CODE_CHARS = 60_000


class ModelError(RuntimeError):
    """The model call failed (the message says how)."""


def flat(answer: dict[str, Any]) -> dict[str, Any]:
    """The server's OpenEnv answer {observation, reward, done} as one observation dict."""
    return {**answer["observation"], "reward": answer["reward"], "done": answer["done"]}


def render(obs: dict[str, Any], first: bool) -> str:
    """The observation as the model reads it."""
    parts = []
    if first:
        parts.append(f"Bug report:\n{obs['task_description']}\n")
    else:
        parts.append(f"Reward {obs['reward']:.3f}; step {obs['step_number']} of {obs['max_steps']}.")
        if obs["info"].get("error"):
            parts.append(f"Your submission was not applied: {obs['info']['error']}")
    parts.append(f"Test status:\n{obs['failing_tests']}\n")
    code = "".join(f"--- {rel} ---\n{text}\n" for rel, text in obs["current_code"].items())
    parts.append("Current code:\n" + code[:MAX_CODE_CHARS])
    return "\n".join(parts)


def call_model(args: argparse.Namespace, messages: list[dict[str, Any]]):
    """One chat completion with the submit_fix tool."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before import: no price-map fetch
    import litellm

    litellm.suppress_debug_info = True  # stdout carries only the JSON lines
    try:
        return litellm.completion(
            model=args.model,
            messages=messages,
            tools=[SUBMIT_TOOL],
            api_base=args.api_base,
            api_key=args.api_key or "none",
            temperature=args.temperature,
            timeout=args.model_timeout,
            num_retries=0,
            max_retries=0,  # a failed call is recorded for the task, not retried behind our back
        )
    except Exception as e:  # noqa: BLE001 - every provider error becomes one line in the record
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ModelError(f"{type(e).__name__}: {first[:300]}") from None


def _cost(resp) -> float:
    try:
        import litellm

        return float(litellm.completion_cost(completion_response=resp) or 0.0)
    except Exception:  # noqa: BLE001 - unknown models have no price; cost stays 0
        return 0.0


def action_from(message) -> tuple[dict[str, Any] | None, str | None, str]:
    """(action, tool_call_id, why-not) from an assistant message."""
    calls = getattr(message, "tool_calls", None) or []
    for call in calls:
        if call.function.name != "submit_fix":
            return None, call.id, f"unknown tool {call.function.name!r}; use submit_fix"
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except ValueError:
            return None, call.id, "the submit_fix arguments are not valid JSON"
        if not isinstance(arguments, dict):
            return None, call.id, "the submit_fix arguments must be an object"
        action = {k: arguments[k] for k in ("path", "patched_code", "diff") if arguments.get(k) is not None}
        return action, call.id, ""
    return None, None, "no submit_fix call in the reply"


def assistant_message(message) -> dict[str, Any]:
    """The assistant turn to keep in the conversation."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in calls
        ]
    return out


def reply(messages: list[dict[str, Any]], call_id: str | None, text: str) -> None:
    """Answer the last assistant turn (as a tool result when it made a call)."""
    if call_id:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
    else:
        messages.append({"role": "user", "content": text})


def run_task(client: httpx.Client, args: argparse.Namespace, task_id: str) -> dict[str, Any]:
    """One episode on `task_id`; never raises."""
    rec: dict[str, Any] = {"task_id": task_id, "model": args.model, "steps": 0, "rewards": [], "done": False,
                           "all_tests_pass": False, "model_calls": 0, "prompt_tokens": 0,
                           "completion_tokens": 0, "cost_usd": 0.0, "error": None}
    start = time.monotonic()
    try:
        r = client.post("/reset", json={"task_id": task_id, "seed": args.seed})
        if r.status_code != 200:
            raise ModelError(f"reset failed ({r.status_code}): {r.json().get('error', r.text)}")
        obs = flat(r.json())
        episode = obs["episode_id"]
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": render(obs, True)}]
        while not obs["done"] and rec["model_calls"] < args.max_calls:
            resp = call_model(args, messages)
            rec["model_calls"] += 1
            usage = getattr(resp, "usage", None)
            rec["prompt_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            rec["completion_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
            rec["cost_usd"] += _cost(resp)
            message = resp.choices[0].message
            messages.append(assistant_message(message))
            action, call_id, why = action_from(message)
            if action is None:
                reply(messages, call_id, f"Not submitted: {why}.")
                continue
            r = client.post("/step", json={"episode_id": episode, "action": action})
            if r.status_code != 200:
                reply(messages, call_id, f"Not submitted: {r.json().get('error', r.text)}")
                continue
            obs = flat(r.json())
            rec["steps"] = obs["step_number"]
            rec["rewards"].append(obs["reward"])
            rec["all_tests_pass"] = bool(obs["info"]["all_tests_pass"])
            rec["done"] = bool(obs["done"])
            reply(messages, call_id, render(obs, False))
        if not obs["done"]:
            rec["error"] = f"stopped after {rec['model_calls']} model calls without finishing"
    except (ModelError, httpx.HTTPError, KeyError, ValueError) as e:
        rec["error"] = f"{type(e).__name__}: {e}" if not isinstance(e, ModelError) else str(e)
    rec["final_reward"] = rec["rewards"][-1] if rec["rewards"] else 0.0
    rec["wall_s"] = round(time.monotonic() - start, 3)
    return rec


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="http://127.0.0.1:8000", help="environment server URL")
    ap.add_argument("--model", default=os.environ.get("MODEL_NAME"), help="litellm model name (MODEL_NAME)")
    ap.add_argument("--api-base", default=os.environ.get("API_BASE_URL"), help="model endpoint (API_BASE_URL)")
    ap.add_argument("--api-key", default=os.environ.get("API_KEY"), help="model API key (API_KEY)")
    ap.add_argument("--tasks", help="comma-separated task ids (default: every task the server lists)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-calls", type=int, default=16, help="model calls per task at most")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--model-timeout", type=float, default=120.0)
    ap.add_argument("--out", type=Path, help="append one JSON line per task here")
    args = ap.parse_args(argv)
    if not args.model:
        print("error: no model: pass --model or set MODEL_NAME", file=sys.stderr)
        return 2
    with httpx.Client(base_url=args.server, timeout=600) as client:
        try:
            listed = [t["id"] for t in client.get("/").json()["tasks"]]
        except (httpx.HTTPError, ValueError, KeyError) as e:
            print(f"error: no environment server at {args.server}: {e}", file=sys.stderr)
            return 2
        ids = [i.strip() for i in args.tasks.split(",") if i.strip()] if args.tasks else listed
        if args.limit:
            ids = ids[: args.limit]
        solved = 0
        for task_id in ids:
            rec = run_task(client, args, task_id)
            solved += rec["all_tests_pass"]
            line = json.dumps(rec, sort_keys=True)
            print(line, flush=True)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                with open(args.out, "a") as f:
                    f.write(line + "\n")
    print(f"solved {solved} of {len(ids)} task(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
