"""Scripted reference agents that act only through the toolbox, like a model would.

- noop: submits at once (never resolves: unchanged source scores 0).
- oracle: applies the task's oracle.patch, then submits.
- conventional: applies conventional.patch, then resubmits unchanged after every feedback.
- patch: applies the patch file named by `agent.patch`, to replay any fix or audit the grader.

oracle and conventional declare `Capabilities(needs_answer_key=True)`: the episode hands them the task's
answer key (`ctx.answer_key`), which no other agent receives. A patch is read on the host side
(the sandbox never sees it) and applied hunk by hunk with `edit_file` (old lines + context -> new lines + context), new files
with `write_file`, deleted files with `bash rm`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sdebench.agents.base import STOP_SUBMITTED, AgentContext, AnswerKey, Capabilities, RunResult, Usage
from sdebench.errors import AgentError

NO_NEWLINE = "\\ No newline at end of file"


@dataclass
class FileChange:
    """The edits one patch makes to one file."""

    path: str
    kind: str  # modify | create | delete
    hunks: list[tuple[str, str]] = field(default_factory=list)  # (old text, new text)


class PatchError(AgentError, ValueError):
    """A patch that cannot be parsed."""


def parse_patch(text: str) -> list[FileChange]:
    """Split a git-format unified diff into per-file hunks of (old, new) text."""
    changes: list[FileChange] = []
    lines = text.splitlines()
    i = 0
    current: FileChange | None = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[-1]
            current = FileChange(path, "modify")
            changes.append(current)
        elif line.startswith("new file mode") and current:
            current.kind = "create"
        elif line.startswith("deleted file mode") and current:
            current.kind = "delete"
        elif line.startswith("+++ ") and current is None:
            # A plain unified diff without `diff --git` headers.
            target = line[4:].split("\t")[0]
            current = FileChange(target[2:] if target.startswith("b/") else target, "modify")
            changes.append(current)
        elif line.startswith("@@"):
            if current is None:
                raise PatchError(f"hunk before any file header at line {i + 1}")
            i = _read_hunk(lines, i, current)
            continue
        i += 1
    if not changes:
        raise PatchError("no file changes in patch")
    return changes


_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _read_hunk(lines: list[str], i: int, change: FileChange) -> int:
    """Read the hunk whose header is line `i`; append (old, new) to `change`; return the next index."""
    m = _HUNK.match(lines[i])
    if not m:
        raise PatchError(f"bad hunk header at line {i + 1}: {lines[i]!r}")
    old_left = int(m.group(1) or 1)
    new_left = int(m.group(2) or 1)
    old: list[str] = []
    new: list[str] = []
    last: list[list[str]] = []
    i += 1
    while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i] == NO_NEWLINE):
        line = lines[i]
        if line == NO_NEWLINE:
            for side in last:
                side[-1] = side[-1][:-1]  # the previous line has no trailing newline
            i += 1
            continue
        tag, body = (line[:1] or " "), line[1:] + "\n"
        if tag not in (" ", "-", "+"):
            raise PatchError(f"bad hunk line {i + 1}: {line!r}")
        last = []
        if tag in (" ", "-"):
            old.append(body)
            last.append(old)
            old_left -= 1
        if tag in (" ", "+"):
            new.append(body)
            last.append(new)
            new_left -= 1
        i += 1
    if old_left > 0 or new_left > 0:
        raise PatchError(f"hunk of {change.path} ends early")
    change.hunks.append(("".join(old), "".join(new)))
    return i


class ScriptedAgent:
    """Base of the reference agents: counts steps and applies patches through the toolbox."""

    name = "scripted"
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self) -> None:
        self.usage = Usage()
        self.ctx: AgentContext | None = None
        self.errors: list[str] = []

    @classmethod
    def from_config(cls, cfg: dict) -> ScriptedAgent:
        """Build from the agent's config (scripted agents take no options)."""
        return cls()

    def start(self, ctx: AgentContext) -> None:
        """Keep the context; scripted agents build no prompt."""
        self.ctx = ctx
        ctx.trajectory.log("agent_start", agent=self.name, tools=ctx.toolbox.names())

    def feedback(self, text: str) -> None:
        """Scripted agents ignore feedback (it is recorded in the trajectory by the episode)."""

    def close(self) -> None:
        """Scripted agents hold nothing to release."""

    def answer_key(self) -> AnswerKey:
        """The answer key the episode handed over (agents whose capabilities need it)."""
        key = self.ctx.answer_key if self.ctx is not None else None
        if key is None:
            raise ValueError(f"agent {self.name} needs the task's answer key, and none was given")
        return key

    def _call(self, name: str, **args) -> bool:
        res = self.ctx.toolbox.call(name, args)
        self._steps += 1
        if res.error:
            self.errors.append(f"{name}: {res.output}")
        return not res.error

    def _submit(self) -> RunResult:
        self._call("submit")
        return RunResult(STOP_SUBMITTED, turns=self._steps, extra={"errors": list(self.errors)} if self.errors else {})

    def apply(self, patch_text: str) -> None:
        """Apply a unified diff with edit_file / write_file / bash calls."""
        for change in parse_patch(patch_text):
            if change.kind == "delete":
                self._call("bash", command=f"rm -f -- {shlex.quote(change.path)}")
            elif change.kind == "create":
                self._call("write_file", path=change.path, content="".join(new for _, new in change.hunks))
            else:
                for old, new in change.hunks:
                    if old:
                        self._call("edit_file", path=change.path, old_string=old, new_string=new)
                    else:
                        self._call("write_file", path=change.path, content=new)

    def run(self) -> RunResult:
        """Act, then submit."""
        self._steps = 0
        return self._submit()


class NoopAgent(ScriptedAgent):
    """Submits at once."""

    name = "noop"


class PatchAgent(ScriptedAgent):
    """Applies one patch on the first run; later runs resubmit unchanged."""

    name = "patch"

    def __init__(self, patch_path: str | Path | None = None) -> None:
        super().__init__()
        self.patch_path = Path(patch_path) if patch_path else None
        self.applied = False

    @classmethod
    def from_config(cls, cfg: dict) -> PatchAgent:
        """Build from the run config; the patch file is `agent.patch`."""
        if cls is not PatchAgent:
            return cls()
        path = (cfg.get("agent") or {}).get("patch")
        if not path:
            raise ValueError("agent=patch needs agent.patch=PATH (a unified diff to apply)")
        if not Path(path).is_file():
            raise ValueError(f"agent.patch: no such file: {path}")
        return cls(path)

    def patch_text(self) -> str:
        """The patch to apply."""
        if self.patch_path is None:
            raise ValueError("agent=patch needs agent.patch=PATH")
        return self.patch_path.read_text()

    def run(self) -> RunResult:
        """Apply the patch once, then submit."""
        self._steps = 0
        if not self.applied:
            self.applied = True
            try:
                self.apply(self.patch_text())
            except (OSError, ValueError) as e:
                self.errors.append(f"patch: {e}")
                self.ctx.trajectory.log("agent_error", error=str(e))
        return self._submit()


class OracleAgent(PatchAgent):
    """Applies the task's oracle.patch."""

    name = "oracle"
    capabilities = Capabilities(needs_answer_key=True)

    def patch_text(self) -> str:
        """The task's reference fix."""
        return self.answer_key().oracle_patch


class ConventionalAgent(PatchAgent):
    """Applies the task's conventional.patch and resubmits it unchanged after feedback."""

    name = "conventional"
    capabilities = Capabilities(needs_answer_key=True)

    def patch_text(self) -> str:
        """The conventional-guess fix."""
        return self.answer_key().conventional_patch
