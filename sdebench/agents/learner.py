"""The `learner` reference agent: it fixes the bug only if the memory it can see holds the fact.

Before every attempt it gathers the memory reachable in this episode, through the same channels
an LLM agent has: the prompt additions (inject, oracle), the workspace's `.agent/preferences.md`
and `.agent/past_fixes.md` (full), and `memory_search` (memtool), queried with the statement and
the task's fact spellings (from its answer key, `Capabilities(needs_answer_key=True)`) so the probe asks "is the fact reachable here?" rather than "does BM25
rank it first?". If any fact token occurs (sdebench.tasks.tokens.find_tokens) it applies the oracle
patch, else the conventional one. After feedback it looks again the same way; the feedback text
itself is not memory, so within one task it cannot learn; across a stream it learns only from
what the harness carries.
"""

from __future__ import annotations

from sdebench.agents.base import AgentContext, Capabilities, RunResult
from sdebench.agents.reference import ScriptedAgent, parse_patch
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES
from sdebench.tasks.tokens import find_tokens

MAX_K = 20


class LearnerAgent(ScriptedAgent):
    """Oracle fix when visible memory holds the fact, conventional fix otherwise."""

    name = "learner"
    capabilities = Capabilities(needs_answer_key=True)

    def __init__(self) -> None:
        super().__init__()
        self.applied: str | None = None  # the patch currently applied to the workspace
        self.decisions: list[dict] = []

    def start(self, ctx: AgentContext) -> None:
        """Keep the context."""
        super().start(ctx)
        self.applied = None
        self.decisions = []

    def visible_memory(self) -> str:
        """All memory text this episode exposes to the agent."""
        ctx = self.ctx
        names = set(ctx.toolbox.names())
        parts = list(ctx.prompt_additions)
        if "read_file" in names:
            for rel in (PREFERENCES, PAST_FIXES):
                res = ctx.toolbox.call("read_file", {"path": rel})
                self._steps += 1
                if not res.error:
                    parts.append(res.output)
        if "memory_search" in names:
            query = " ".join([ctx.statement, *self.answer_key().fact_tokens])
            res = ctx.toolbox.call("memory_search", {"query": query, "k": MAX_K})
            self._steps += 1
            if not res.error:
                parts.append(res.output)
        return "\n\n".join(parts)

    def _unapply(self, patch_text: str) -> None:
        """Undo a patch this agent applied (new text back to old, hunk by hunk)."""
        for change in parse_patch(patch_text):
            if change.kind == "modify":
                for old, new in change.hunks:
                    if new:
                        self._call("edit_file", path=change.path, old_string=new, new_string=old)

    def run(self) -> RunResult:
        """Look at memory, apply the fix it supports (switching if the choice changed), submit."""
        self._steps = 0
        key = self.answer_key()
        found = find_tokens(self.visible_memory(), key.fact_tokens)
        choice = "oracle" if found else "conventional"
        self.decisions.append({"choice": choice, "tokens": found})
        self.ctx.trajectory.log("learner_decision", choice=choice, tokens=found)
        patch = key.oracle_patch if found else key.conventional_patch
        if self.applied != patch:
            if self.applied is not None:
                self._unapply(self.applied)
            try:
                self.apply(patch)
                self.applied = patch
            except ValueError as e:
                self.errors.append(f"patch: {e}")
        result = self._submit()
        result.extra["learner"] = choice
        return result
