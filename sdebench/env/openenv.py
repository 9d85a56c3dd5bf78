"""The OpenEnv wire protocol over sdebench's environment (sdebench.env.environment).

What OpenEnv's clients and its runtime validator (`openenv validate --url`) speak:

- `POST /reset`, `POST /step` answer `{"observation": {...}, "reward": float|null, "done": bool}`;
  `GET /state` answers a State (`episode_id`, `step_count`, and sdebench's fields).
- `GET /health` is `{"status": "healthy"}`; `GET /metadata` has `name` and `description`;
  `GET /schema` has the action, observation and state JSON schemas; `POST /mcp` answers JSON-RPC
  2.0 (this environment has no MCP tools); `GET /openapi.json` carries the version.
- `WS /ws` is one session per connection: `{"type": "reset", "data": {...}}`,
  `{"type": "step", "data": ACTION}`, `{"type": "state"}`, `{"type": "close"}`; answers
  `{"type": "observation" | "state" | "error", "data": ...}`.

OpenEnv's HTTP reset/step are stateless; here they keep sdebench's sessions: the observation of
`POST /reset` carries the `episode_id` that `POST /step` and `GET /state` take. The observation
never carries the task id (a client may show it to an agent); the state does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sdebench.env.environment import CodeFixEnv, EnvError, EpisodeDone, NoEpisode, Observation, UnknownTask

NAME = "sdebench"
DESCRIPTION = ("Fix a bug in a Python repo whose fix depends on a project fact; each step is graded by running "
               "the task's tests in a sandbox, with held-out tests reported only as the feedback policy allows.")
HIDDEN_FROM_OBSERVATION = ("task_id",)  # an observation may reach the agent: it must not name the task
ENVELOPE = ("reward", "done")


class ResetRequest(BaseModel):
    """Body of reset (HTTP or WebSocket `data`); all optional."""

    model_config = ConfigDict(extra="forbid")
    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255, description="ignored: the server names episodes")
    task_id: str | None = None


class Action(BaseModel):
    """A full replacement file (`patched_code`, optional `path`) or a unified `diff`."""

    model_config = ConfigDict(extra="forbid")
    patched_code: str | None = None
    path: str | None = None
    diff: str | None = None


class StepRequest(BaseModel):
    """Body of `POST /step`: OpenEnv's fields plus the session's `episode_id`."""

    model_config = ConfigDict(extra="forbid")
    action: Action
    episode_id: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


class CodeFixObservation(BaseModel):
    """The observation fields (reward and done travel beside them)."""

    episode_id: str
    task_description: str
    current_code: dict[str, str]
    failing_tests: str
    step_number: int
    max_steps: int
    reward_breakdown: dict[str, float] | None = None
    info: dict[str, Any] = Field(default_factory=dict)


class CodeFixState(BaseModel):
    """The episode state."""

    model_config = ConfigDict(extra="allow")
    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


def envelope(obs: Observation) -> dict[str, Any]:
    """OpenEnv's reset/step answer for one sdebench observation."""
    d = obs.to_dict()
    body = {k: v for k, v in d.items() if k not in ENVELOPE and k not in HIDDEN_FROM_OBSERVATION}
    return {"observation": body, "reward": d["reward"], "done": d["done"]}


def state(env: CodeFixEnv) -> dict[str, Any]:
    """OpenEnv's State for the episode of `env` (episode_id, step_count, sdebench's fields)."""
    st = env.state()
    return {"episode_id": st["episode_id"], "step_count": st["step_number"], **st}


def metadata(version: str) -> dict[str, Any]:
    """GET /metadata."""
    return {"name": NAME, "description": DESCRIPTION, "version": version, "author": "sdebench",
            "readme_content": None, "documentation_url": None}


def schema() -> dict[str, Any]:
    """GET /schema."""
    return {"action": Action.model_json_schema(), "observation": CodeFixObservation.model_json_schema(),
            "state": CodeFixState.model_json_schema()}


def mcp_answer(raw: bytes) -> dict[str, Any]:
    """POST /mcp: a JSON-RPC 2.0 answer; there are no tools."""
    try:
        req = json.loads(raw or b"null")
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    if not isinstance(req, dict) or req.get("jsonrpc") != "2.0" or not isinstance(req.get("method"), str):
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    rid = req.get("id")
    if req["method"] == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": []}}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {req['method']}"}}


class WsSlots:
    """A cap on concurrent WebSocket sessions."""

    def __init__(self, limit: int):
        self.limit = limit
        self._n = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Reserve a slot; False when all are taken."""
        with self._lock:
            if self._n >= self.limit:
                return False
            self._n += 1
            return True

    def give(self) -> None:
        """Release a slot."""
        with self._lock:
            self._n -= 1

    def __len__(self) -> int:
        return self._n


def _error(message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


def register_ws(app: FastAPI, new_env, slots: WsSlots) -> None:
    """`WS /ws`: one environment per connection (made by `new_env()`), closed with it."""

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        if not slots.take():
            await websocket.send_text(json.dumps(_error(f"all {slots.limit} sessions are in use", "CAPACITY_REACHED")))
            await websocket.close()
            return
        env: CodeFixEnv = new_env()
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    msg = json.loads(raw)
                except ValueError as e:
                    await websocket.send_text(json.dumps(_error(f"Invalid JSON: {e}", "INVALID_JSON")))
                    continue
                kind = msg.get("type") if isinstance(msg, dict) else None
                if kind == "close":
                    break
                await websocket.send_text(json.dumps(await _ws_answer(env, kind, msg)))
        except WebSocketDisconnect:
            pass
        finally:
            await asyncio.to_thread(env.close)
            slots.give()
            with contextlib.suppress(RuntimeError):  # already closed by the client
                await websocket.close()


async def _ws_answer(env: CodeFixEnv, kind: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """The answer to one WebSocket message (errors included, never raised)."""
    data = msg.get("data", {})
    try:
        if kind == "reset":
            req = ResetRequest.model_validate(data if data is not None else {})
            obs = await asyncio.to_thread(env.reset, seed=req.seed, task_id=req.task_id)
            return {"type": "observation", "data": envelope(obs)}
        if kind == "step":
            action = Action.model_validate(data).model_dump(exclude_none=True)
            obs = await asyncio.to_thread(env.step, action)
            return {"type": "observation", "data": envelope(obs)}
        if kind == "state":
            return {"type": "state", "data": state(env)}
        return _error(f"Unknown message type: {kind}", "UNKNOWN_TYPE")
    except ValidationError as e:
        errors = [{"loc": list(err.get("loc", ())), "msg": err.get("msg", "")} for err in e.errors()]
        return _error("Invalid message", "VALIDATION_ERROR", errors=errors)
    except (UnknownTask, NoEpisode, EpisodeDone, EnvError) as e:
        return _error(str(e), "EXECUTION_ERROR", error_type=type(e).__name__)
    except Exception as e:  # noqa: BLE001 - the session survives anything unexpected, with the reason
        return _error(f"internal error: {type(e).__name__}: {e}", "EXECUTION_ERROR")
