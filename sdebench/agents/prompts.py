"""The prompts of the LLM agent: templates from conf/agent/llm.yaml and their rendering.

Templates use `str.format` fields ({statement}, {additions}, {tools}, {feedback}, {name}, {error},
{available}); a value is inserted verbatim, so braces inside a statement or test output are safe.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdebench.errors import AgentError

# the fields each template may use
FIELDS: dict[str, tuple[str, ...]] = {
    "system": ("tools",),
    "instance": ("statement", "additions", "tools"),
    "feedback": ("feedback",),
    "no_tool_call": ("tools",),
    "unknown_tool": ("name", "available"),
    "bad_arguments": ("name", "error"),
    "skipped_after_submit": ("name",),
}


class PromptError(AgentError, ValueError):
    """A prompt template is missing or uses an unknown field."""


@dataclass(frozen=True)
class Prompts:
    """All templates the agent renders."""

    system: str
    instance: str
    feedback: str
    no_tool_call: str
    unknown_tool: str
    bad_arguments: str
    skipped_after_submit: str

    @classmethod
    def from_config(cls, d: Mapping[str, Any]) -> Prompts:
        """Read and check the `prompts` block of the agent config."""
        missing = [k for k in FIELDS if not isinstance(d.get(k), str)]
        if missing:
            raise PromptError(f"agent.prompts is missing template(s): {', '.join(missing)}")
        for key, allowed in FIELDS.items():
            used = {f for _, f, _, _ in string.Formatter().parse(d[key]) if f is not None}
            bad = sorted(f for f in used if f not in allowed)
            if bad:
                raise PromptError(
                    f"agent.prompts.{key} uses unknown field(s) {bad}; allowed: {list(allowed)} "
                    "(write literal braces as {{ }})"
                )
        return cls(**{k: d[k] for k in FIELDS})

    def render(self, key: str, **values: Any) -> str:
        """Fill template `key`; fields it does not use are ignored."""
        return getattr(self, key).format(**values).strip()


def additions_block(additions: list[str]) -> str:
    """The delivery's prompt additions (memory, oracle fact...) joined into one block."""
    return "\n\n".join(a.strip() for a in additions if a and a.strip())
