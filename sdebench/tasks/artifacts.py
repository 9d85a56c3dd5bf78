"""The vocabulary of a task: its sources, bottlenecks, and which repo paths are memory artifacts.

One definition, imported by generation (placement and leak checks), delivery (what squashing
removes), grading (what counts as source) and analysis.
"""

from __future__ import annotations

SOURCES = ("H", "K", "F", "X", "none")
BOTTLENECKS = ("knowledge-missing", "exploration-heavy", "multi-hop")

# Paths that are memory artifacts rather than code: their content is K, F or X memory,
# and their diffs are not counted as history (H). Anything else is code or tests.
AGENT_DIR = ".agent/"
PREFERENCES = ".agent/preferences.md"
PAST_FIXES = ".agent/past_fixes.md"
KNOWLEDGE_NAMES = ("CONVENTIONS.md", "AGENTS.md", "CLAUDE.md", "CONTRIBUTING.md")


def artifact_kind(path: str) -> str | None:
    """Which memory source a repo path belongs to: 'K', 'F', 'X', or None for code/tests."""
    if path == PREFERENCES:
        return "F"
    if path == PAST_FIXES:
        return "X"
    if path.startswith(AGENT_DIR):
        return "K"
    name = path.rsplit("/", 1)[-1]
    if path.startswith("docs/") or name in KNOWLEDGE_NAMES or path.endswith(".md"):
        return "K"
    return None
