"""The agent's tools: bash, read/edit/write files, run the visible tests, submit, and the memory system's.

Every tool acts through the episode's sandbox, so the same toolbox works on every backend. Paths
are workspace-relative: absolute paths, `..` escapes and paths whose symlinks resolve outside the
workspace (checked inside the sandbox) are rejected. Long outputs keep head and tail with a
marker. `call` never raises: a bad call is an error result the agent can read.

The memory tools (memtool) are the memory system's own (sdebench.memory: its names, descriptions
and argument schemas); the toolbox checks their arguments against the declared schema's required
keys and object shape and passes them on, so BM25's `memory_search` and a knowledge graph's
`search_nodes` go through the same path.

The toolbox runs on the host and keeps what its tools need (the sandbox, the memory system, the
visible test ids); the agent is handed a `ToolView` of it, which exposes only the tool names,
their schemas and `call`. An optional host-side `observer` (sdebench.runs.retrieval) is told of
every call with the output the agent got, and of every memory search with the items it showed,
in rank order; it never changes what the agent sees.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from sdebench.agents.base import ToolResult
from sdebench.agents.trajectory import Trajectory
from sdebench.delivery.backend import SEARCH, WRITE, MemoryCallError, strings
from sdebench.errors import AgentError
from sdebench.grading.testrun import run_tests
from sdebench.sandbox.base import Sandbox

TRUNCATED = "\n[... {n} chars truncated ...]\n"
MAX_FAILURES_KEPT = 20


def truncate(text: str, limit: int) -> str:
    """`text` cut to about `limit` chars, keeping head and tail around a marker."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return text[:half] + TRUNCATED.format(n=len(text) - 2 * half) + text[-half:]


class ToolError(AgentError):
    """A rejected tool call; its message goes back to the agent."""


@dataclass(frozen=True)
class Param:
    """One tool parameter."""

    type: str  # JSON schema type: string | integer
    description: str
    required: bool = True


SPECS: dict[str, tuple[str, dict[str, Param]]] = {
    "bash": (
        "Run a bash command in the repository root (no network). Returns exit code, stdout and stderr.",
        {
            "command": Param("string", "The command to run."),
            "timeout": Param("integer", "Seconds before the command is killed (default 60).", False),
        },
    ),
    "read_file": (
        "Read a text file of the repository. Paths are relative to the repository root.",
        {
            "path": Param("string", "Repository-relative file path."),
            "start_line": Param("integer", "First line to return (1-based, optional).", False),
            "end_line": Param("integer", "Last line to return (inclusive, optional).", False),
        },
    ),
    "edit_file": (
        "Replace one exact occurrence of old_string with new_string in a file. Fails if old_string is "
        "absent or occurs more than once (add surrounding lines to make it unique).",
        {
            "path": Param("string", "Repository-relative file path."),
            "old_string": Param("string", "The exact text to replace."),
            "new_string": Param("string", "The replacement text."),
        },
    ),
    "write_file": (
        "Create or overwrite a file with the given content (parent directories are created).",
        {
            "path": Param("string", "Repository-relative file path."),
            "content": Param("string", "The full new content of the file."),
        },
    ),
    "run_tests": (
        "Run the repository's visible tests for this task (the failing repro test and the existing suite) "
        "and report per-test outcomes.",
        {},
    ),
    "submit": (
        "Submit the current state of the repository as your fix. Call it once you are done.",
        {},
    ),
}


def schema(name: str) -> dict[str, Any]:
    """The OpenAI function-tool schema of one tool."""
    description, params = SPECS[name]
    props = {k: {"type": p.type, "description": p.description} for k, p in params.items()}
    required = [k for k, p in params.items() if p.required]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False},
        },
    }


class Toolbox:
    """The tools of one episode, bound to its sandbox; counts calls and time per tool."""

    def __init__(
        self,
        sandbox: Sandbox,
        tools: tuple[str, ...] | list[str],
        memory: Any = None,
        trajectory: Trajectory | None = None,
        *,
        visible_tests: tuple[str, ...] | list[str] = (),
        max_output_chars: int = 16_000,
        bash_timeout: float = 60.0,
        max_bash_timeout: float = 600.0,
        test_timeout: float = 300.0,
        observer: Any = None,
    ):
        # The memory system's own tools (sdebench.delivery.backend.MemoryTool), by name.
        self.memory_tools = {t.name: t for t in memory.tools()} if memory is not None else {}
        unknown = [t for t in tools if t not in SPECS and t not in self.memory_tools]
        if unknown:
            raise ValueError(f"unknown tools: {', '.join(unknown)}")
        self.sandbox = sandbox
        self.visible = tuple(visible_tests)
        self.tools = tuple(tools)
        self.memory = memory
        self.trajectory = trajectory
        self.max_output_chars = max_output_chars
        self.bash_timeout = bash_timeout
        self.max_bash_timeout = max_bash_timeout
        self.test_timeout = test_timeout
        self.observer = observer  # has .tool(name, arguments, output, error) and .searched(tool, query, items)
        self.written: list[dict[str, Any]] = []  # the agent's write calls to the memory system: tool and text
        # calls the memory system failed (not a rejected argument): they stay the agent's outcome, since its calls
        # reach the system directly and an error would let a submission leave the rates; the record counts them
        self.memory_failures: list[str] = []
        self.counts: Counter[str] = Counter()
        self.errors = 0
        self.seconds = 0.0
        self.submitted = False

    # --- protocol ------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Tool names available in this episode."""
        return list(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of the available tools."""
        return [self.memory_tools[n].schema() if n in self.memory_tools else schema(n) for n in self.tools]

    def memory_names(self) -> list[str]:
        """The memory system's tools available in this episode (none outside memtool)."""
        return [n for n in self.tools if n in self.memory_tools]

    def call(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        """Run one tool; a bad call becomes an error result, never an exception."""
        start = time.monotonic()
        error = False
        try:
            if name not in self.tools:
                raise ToolError(f"unknown tool {name!r}; available: {', '.join(self.tools)}")
            if name in self.memory_tools:
                output, error = self._memory(name, self._memory_arguments(name, arguments))
            else:
                output = getattr(self, f"_{name}")(**self._arguments(name, arguments))
        except (ToolError, MemoryCallError) as e:
            output, error = f"Error: {e}", True
        except Exception as e:  # noqa: BLE001 - a tool never raises to the agent
            output, error = f"Error: {type(e).__name__}: {e}", True
        output = truncate(output, self.max_output_chars)
        took = time.monotonic() - start
        key = name if name in SPECS or name in self.memory_tools else "unknown"
        self.counts[key] += 1
        self.errors += error
        self.seconds += took
        submitted = name == "submit" and not error
        self.submitted = self.submitted or submitted
        if self.observer is not None:
            self.observer.tool(name, arguments, output, error)
        if self.trajectory is not None:
            self.trajectory.log("tool", name=name, arguments=arguments, output=output, error=error, duration_s=round(took, 4))
        return ToolResult(name, output, error=error, submitted=submitted, duration_s=took)

    @staticmethod
    def _object(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
        """The arguments of a call as a JSON object."""
        if arguments is None or arguments == "":
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as e:
                raise ToolError(f"arguments are not valid JSON: {e}") from None
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        return arguments

    def _memory_arguments(self, name: str, arguments: dict[str, Any] | str | None) -> dict[str, Any]:
        """The arguments of a memory tool call, checked for the keys its schema requires and passed on as given."""
        args = self._object(arguments)
        required = (self.memory_tools[name].parameters or {}).get("required") or []
        missing = [k for k in required if args.get(k) is None]
        if missing:
            raise ToolError(f"{name}: missing required argument {missing[0]!r}")
        return args

    def _arguments(self, name: str, arguments: dict[str, Any] | str | None) -> dict[str, Any]:
        """Validated keyword arguments for tool `name` (unknown keys are dropped)."""
        arguments = self._object(arguments)
        params = SPECS[name][1]
        out = {}
        for key, p in params.items():
            if key not in arguments or arguments[key] is None:
                if p.required:
                    raise ToolError(f"{name}: missing required argument {key!r}")
                continue
            value = arguments[key]
            if p.type == "integer":
                if isinstance(value, bool) or not isinstance(value, int | float | str):
                    raise ToolError(f"{name}: argument {key!r} must be an integer")
                try:
                    value = int(value)
                except ValueError:
                    raise ToolError(f"{name}: argument {key!r} must be an integer") from None
            elif not isinstance(value, str):
                raise ToolError(f"{name}: argument {key!r} must be a string")
            out[key] = value
        return out

    # --- paths ---------------------------------------------------------------------------
    def _path(self, path: str) -> str:
        """A checked workspace-relative path; rejects escapes, also through symlinks."""
        p = PurePosixPath(path.strip())
        if not path.strip() or p.is_absolute() or path.startswith("~"):
            raise ToolError(f"path {path!r} must be relative to the repository root")
        if ".." in p.parts:
            raise ToolError(f"path {path!r} leaves the repository ('..' is not allowed)")
        rel = p.as_posix()
        if rel == ".":
            raise ToolError("a file path is needed, not the repository root")
        # Resolve inside the sandbox: that is where the file lives and where links point.
        res = self.sandbox.exec(["realpath", "-m", "--", ".", rel], timeout=30)
        lines = res.stdout.splitlines()
        if res.exit_code != 0 or len(lines) != 2:
            raise ToolError(f"cannot resolve path {path!r}: {res.stderr.strip()[:200]}")
        root, target = lines
        if target != root and not target.startswith(root.rstrip("/") + "/"):
            raise ToolError(f"path {path!r} resolves outside the repository")
        return rel

    # --- tools ---------------------------------------------------------------------------
    def _bash(self, command: str, timeout: int | None = None) -> str:
        limit = min(float(timeout or self.bash_timeout), self.max_bash_timeout)
        if limit <= 0:
            raise ToolError("timeout must be positive")
        res = self.sandbox.exec(command, timeout=limit)
        parts = [f"exit code: {res.exit_code}" + (f" (killed after {limit:g}s timeout)" if res.timed_out else "")]
        if res.stdout:
            parts.append("stdout:\n" + res.stdout)
        if res.stderr:
            parts.append("stderr:\n" + res.stderr)
        return "\n".join(parts)

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        rel = self._path(path)
        text = self._read(rel, path)
        if start_line is None and end_line is None:
            return text
        lines = text.splitlines(keepends=True)
        lo = max(start_line or 1, 1)
        hi = min(end_line or len(lines), len(lines))
        return "".join(lines[lo - 1 : hi])

    def _read(self, rel: str, shown: str) -> str:
        try:
            return self.sandbox.read_file(rel)
        except IsADirectoryError:
            raise ToolError(f"{shown} is a directory") from None
        except (FileNotFoundError, KeyError):
            raise ToolError(f"{shown}: no such file") from None

    def _edit_file(self, path: str, old_string: str, new_string: str) -> str:
        rel = self._path(path)
        text = self._read(rel, path)
        if not old_string:
            raise ToolError("old_string must not be empty (use write_file to create a file)")
        n = text.count(old_string)
        if n == 0:
            raise ToolError(f"old_string not found in {path}")
        if n > 1:
            raise ToolError(f"old_string occurs {n} times in {path}; include more surrounding text to make it unique")
        self.sandbox.write_file(rel, text.replace(old_string, new_string, 1))
        return f"Edited {rel}."

    def _write_file(self, path: str, content: str) -> str:
        rel = self._path(path)
        self.sandbox.write_file(rel, content)
        return f"Wrote {len(content)} chars to {rel}."

    def visible_tests(self) -> list[str]:
        """The test ids the agent may run: FAIL_TO_PASS and PASS_TO_PASS."""
        return list(self.visible)

    def _run_tests(self) -> str:
        ids = self.visible_tests()
        run = run_tests(self.sandbox, ids, timeout=self.test_timeout)
        # The runner leaves its report and ini in the workspace (`.sdebench-*`); they are not the agent's work.
        self.sandbox.exec("rm -rf -- .sdebench-*", timeout=30)
        results = {t: run.outcome(t) for t in ids}
        passed = sum(r.passed for r in results.values())
        lines = [f"{passed} of {len(ids)} visible tests passed."]
        if run.error:
            lines.append(f"Test run problem: {run.error}")
        for mod, err in run.import_errors.items():
            lines.append(f"Import error in {mod}: {err}")
        for err in run.collect_errors:
            lines.append(f"Collection error in {err.get('nodeid')}: {err.get('message')}")
        for tid, r in results.items():
            lines.append(f"{r.outcome.upper():8} {tid}")
        for tid, r in results.items():
            if not r.passed and r.message:
                lines.append(f"\n--- {tid} ---\n{r.message}")
        if run.exec is not None and not run.tests and (run.exec.stdout or run.exec.stderr):
            lines.append("\nOutput:\n" + (run.exec.stdout + run.exec.stderr)[-4000:])
        return "\n".join(lines)

    def _memory(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """One memory tool call through the memory system: its text and whether the system flagged an error."""
        tool = self.memory_tools[name]
        try:
            answer = self.memory.call(name, args)
        except MemoryCallError:
            raise
        except Exception as e:  # noqa: BLE001 - the system failed: the agent sees an error result, the record counts it
            if len(self.memory_failures) < MAX_FAILURES_KEPT:
                self.memory_failures.append(f"{name}: {type(e).__name__}: {e}".splitlines()[0][:300])
            raise ToolError(f"the memory system failed ({type(e).__name__})") from None
        if self.observer is not None and tool.kind == SEARCH and not answer.error:
            self.observer.searched(name, args.get(tool.query_arg or "", ""), list(answer.items), answer.asked)
        if tool.kind == WRITE and not answer.error:
            self.written.append({"tool": name, "text": "\n".join(strings(args)), "arguments": args})
        return answer.text, answer.error

    def _submit(self) -> str:
        return "Submitted. The repository will now be graded."

    def stats(self) -> dict[str, Any]:
        """Calls per tool, rejected calls and time spent in tools."""
        return {"tool_calls": dict(self.counts), "tool_errors": self.errors, "tools_s": self.seconds}

    @property
    def logs_calls(self) -> bool:
        """Whether every call is written to the episode's trajectory."""
        return self.trajectory is not None

    def view(self) -> ToolView:
        """The agent's handle on this toolbox."""
        return ToolView(self)


class ToolView:
    """What an agent holds of its toolbox: tool names, schemas and `call`, not the sandbox, memory
    system, test ids or trajectory behind them. `logs_calls` says whether every call (output
    included) is already written to the episode's trajectory, so an agent need not log it twice."""

    __slots__ = ("_toolbox", "logs_calls")

    def __init__(self, toolbox: Toolbox):
        self._toolbox = toolbox
        self.logs_calls = toolbox.logs_calls

    def names(self) -> list[str]:
        """Tool names available in this episode."""
        return self._toolbox.names()

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of the available tools."""
        return self._toolbox.schemas()

    def memory_names(self) -> list[str]:
        """The memory system's tools among them."""
        return self._toolbox.memory_names()

    def call(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        """Run one tool; a bad call becomes an error result, never an exception."""
        return self._toolbox.call(name, arguments)
