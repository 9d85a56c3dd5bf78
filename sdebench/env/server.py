"""`python -m sdebench.serve`: the environment (sdebench.env.environment) over OpenEnv's protocol
(on 127.0.0.1 unless `--host` names another address, e.g. 0.0.0.0 in a container).

The routes are OpenEnv's (sdebench.env.openenv): POST /reset {seed?, task_id?} and POST /step
{episode_id, action: {patched_code, path?} | {diff}} answer {observation, reward, done}, the
observation of a reset carrying the new `episode_id`; GET /state?episode_id=..., GET /health,
/metadata, /schema, POST /mcp and WS /ws (a session per connection). GET / lists the tasks.
HTTP sessions are kept apart by episode id; a bad request gets a 4xx with an `error` message and
the server stays up.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from sdebench import __version__
from sdebench.env import openenv
from sdebench.env.environment import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TIMEOUT,
    BadAction,
    CodeFixEnv,
    EnvError,
    EpisodeDone,
    NoEpisode,
    SandboxUnavailable,
    TaskStore,
    UnknownTask,
    refuse_unsafe,
)
from sdebench.grading.options import DEFAULT_FEEDBACK, POLICIES
from sdebench.sandbox import SandboxError, make_factory
from sdebench.sandbox.base import SandboxFactory
from sdebench.tasks.record import TaskError

HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 32
STATUS = {UnknownTask: 404, NoEpisode: 404, EpisodeDone: 409, BadAction: 400, SandboxUnavailable: 503}


@dataclass
class Session:
    """One episode's environment and the lock serialising its calls."""

    env: CodeFixEnv
    lock: threading.Lock = field(default_factory=threading.Lock)


class Sessions:
    """Episode id -> session; the least recently used one is closed beyond `limit`."""

    def __init__(self, limit: int):
        self.limit = limit
        self._lock = threading.Lock()
        self._by_id: OrderedDict[str, Session] = OrderedDict()

    def add(self, episode_id: str, session: Session) -> None:
        """Register a new session, evicting the oldest ones over the limit."""
        evicted = []
        with self._lock:
            self._by_id[episode_id] = session
            while len(self._by_id) > self.limit:
                evicted.append(self._by_id.popitem(last=False)[1])
        for s in evicted:
            with s.lock:
                s.env.close()

    def get(self, episode_id: str | None) -> Session:
        """The session of `episode_id`, or NoEpisode with the reason."""
        if not episode_id:
            raise NoEpisode("missing episode_id: call POST /reset first and pass the episode_id it returns")
        with self._lock:
            s = self._by_id.get(episode_id)
            if s is None:
                raise NoEpisode(f"unknown episode_id {episode_id!r}: call POST /reset to start an episode")
            self._by_id.move_to_end(episode_id)
            return s

    def close_all(self) -> None:
        """Close every session."""
        with self._lock:
            sessions = list(self._by_id.values())
            self._by_id.clear()
        for s in sessions:
            s.env.close()

    def __len__(self) -> int:
        return len(self._by_id)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def create_app(
    tasks_dir: str | Path,
    factory: SandboxFactory,
    max_steps: int = DEFAULT_MAX_STEPS,
    timeout: float = DEFAULT_TIMEOUT,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    work_root: str | Path | None = None,
    grading: dict[str, Any] | None = None,
    allow_unsafe: bool = False,
) -> FastAPI:
    """The FastAPI app serving the tasks of `tasks_dir` (`grading`: the grade options, e.g. the feedback policy;
    `allow_unsafe`: accept an `unsafe_local` factory, which EnvError refuses otherwise)."""
    refuse_unsafe(factory, allow_unsafe)
    store = TaskStore(tasks_dir)
    sessions = Sessions(max_sessions)
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        sessions.close_all()  # episode dirs go with the server

    app = FastAPI(title="sdebench environment", version=__version__, docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.sessions = sessions
    ws_slots = openenv.WsSlots(max_sessions)

    def new_env() -> CodeFixEnv:
        return CodeFixEnv(store, factory, max_steps=max_steps, timeout=timeout, work_root=work_root, grading=grading,
                          allow_unsafe=allow_unsafe)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"error": _validation_message(exc)})

    @app.exception_handler(EnvError)
    async def _env_error(request: Request, exc: EnvError) -> JSONResponse:
        return JSONResponse(status_code=STATUS.get(type(exc), 400), content={"error": str(exc)})

    @app.exception_handler(TaskError)
    async def _task_error(request: Request, exc: TaskError) -> JSONResponse:
        return JSONResponse(status_code=500, content={"error": f"task store: {exc}"})

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # Anything unexpected is one JSON line for the client; the server keeps serving.
        return JSONResponse(status_code=500, content={"error": f"internal error: {type(exc).__name__}: {exc}"})

    @app.get("/health")
    def health() -> dict[str, Any]:
        """OpenEnv's health check, with the number of open sessions."""
        return {"status": "healthy", "sessions": len(sessions) + len(ws_slots)}

    @app.get("/metadata")
    def metadata() -> dict[str, Any]:
        """Name, description and version (OpenEnv)."""
        return openenv.metadata(__version__)

    @app.get("/schema")
    def schema() -> dict[str, Any]:
        """Action, observation and state JSON schemas (OpenEnv)."""
        return openenv.schema()

    @app.post("/mcp")
    async def mcp(request: Request) -> dict[str, Any]:
        """JSON-RPC 2.0; this environment offers no MCP tools."""
        return openenv.mcp_answer(await request.body())

    @app.get("/")
    def info() -> dict[str, Any]:
        """Environment info and the task list."""
        tasks = [store.get(i) for i in store.ids()]
        return {
            "name": openenv.NAME,
            "description": openenv.DESCRIPTION,
            "sandbox": factory.name,
            "max_steps": max_steps,
            "feedback_hidden": (grading or {}).get("feedback_hidden", DEFAULT_FEEDBACK),
            "action": {"patched_code": "full new file content", "path": "file to replace (optional when one)",
                       "diff": "a unified diff instead of patched_code"},
            "observation": sorted(openenv.CodeFixObservation.model_fields),
            "tasks": [{"id": t.id, "family": t.family, "source": t.source, "bottleneck": t.bottleneck,
                       "competency": t.competency, "grader": t.grader, "tags": list(t.tags)} for t in tasks],
            "task_errors": list(store.errors),
        }

    @app.post("/reset")
    def reset(body: openenv.ResetRequest | None = Body(default=None)) -> dict[str, Any]:
        """Start a new episode (a new session); its observation carries the `episode_id`."""
        body = body or openenv.ResetRequest()
        env = new_env()
        obs = env.reset(seed=body.seed, task_id=body.task_id)
        sessions.add(obs.episode_id, Session(env))
        return openenv.envelope(obs)

    @app.post("/step")
    def step(body: openenv.StepRequest) -> dict[str, Any]:
        """Apply one action in the given episode."""
        s = sessions.get(body.episode_id)
        with s.lock:
            return openenv.envelope(s.env.step(body.action.model_dump(exclude_none=True)))

    @app.get("/state")
    def state(episode_id: str | None = None) -> dict[str, Any]:
        """The state of the given episode."""
        s = sessions.get(episode_id)
        with s.lock:
            return openenv.state(s.env)

    openenv.register_ws(app, new_env, ws_slots)
    return app


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: serve on `--host` (default 127.0.0.1) until interrupted."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default=HOST,
                    help=f"address to listen on (default {HOST}: this machine only; 0.0.0.0 or :: for every "
                         "interface, e.g. in a container)")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: pick a free one)")
    ap.add_argument("--tasks-dir", type=Path, default=Path("tasks"), help="dir of task dirs (default: tasks)")
    ap.add_argument("--sandbox", default="local",
                    help="sandbox backend for test runs: local (default), docker, or unsafe_local (no isolation: "
                         "only when named here)")
    ap.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS)
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per test run")
    ap.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS)
    ap.add_argument("--feedback-hidden", default=DEFAULT_FEEDBACK, choices=POLICIES,
                    help=f"what an observation says about held-out tests (default: {DEFAULT_FEEDBACK})")
    args = ap.parse_args(argv)
    if not args.tasks_dir.is_dir():
        print(f"error: tasks dir {args.tasks_dir} does not exist", file=sys.stderr)
        return 2
    try:
        # The task store holds the hidden tests: test runs must never see it.
        factory = make_factory({"backend": args.sandbox, "tasks_dir": str(args.tasks_dir.resolve())})
    except (SandboxError, TypeError) as e:
        print(f"error: sandbox {args.sandbox!r}: {e}", file=sys.stderr)
        return 2
    import uvicorn

    # Naming unsafe_local on the command line is the explicit choice the environment asks for.
    app = create_app(args.tasks_dir, factory, args.max_steps, args.timeout, args.max_sessions,
                     grading={"feedback_hidden": args.feedback_hidden}, allow_unsafe=args.sandbox == "unsafe_local")
    try:
        sock = listen(args.host, args.port)
    except OSError as e:
        print(f"error: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    shown = f"[{host}]" if ":" in host else host
    print(f"sdebench.serve listening on http://{shown}:{port}", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host` (a name, an IPv4 or an IPv6 address) and `port`; OSError if it cannot be."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)  # connections queue from here on, so the banner can be trusted at once
    except OSError:
        sock.close()
        raise
    return sock

if __name__ == "__main__":
    sys.exit(main())
