"""The vocabulary of a task: its sources, bottlenecks, competencies and tiers, and which repo paths
are memory artifacts.

One definition, imported by generation (placement and leak checks), delivery (what squashing
removes), grading (what counts as source) and analysis.
"""

from __future__ import annotations

SOURCES = ("H", "K", "F", "X", "none")
BOTTLENECKS = ("knowledge-missing", "exploration-heavy", "multi-hop")
# How the fact must be worked out of memory (docs/hard.md): `recall` (one item states it), and the
# hard tier: `conflict` (a later statement wins, unlabelled), `synthesis` (composed from several
# items), `scope` (a condition or exception stated apart), `validity` (effective dates), `implicit`
# (nothing hints that a convention exists).
RECALL = "recall"
COMPETENCIES = (RECALL, "conflict", "synthesis", "scope", "validity", "implicit")
TIERS = (RECALL, "hard")


def tier_of(competency: str) -> str:
    """The tier of a competency: `recall` for recall, `hard` for every other known one (ValueError otherwise)."""
    if competency not in COMPETENCIES:
        raise ValueError(f"unknown competency {competency!r} (choose {', '.join(COMPETENCIES)})")
    return RECALL if competency == RECALL else "hard"


def competencies_of(tier: str) -> tuple[str, ...]:
    """The competencies of a tier (ValueError for an unknown tier)."""
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r} (choose {', '.join(TIERS)})")
    return tuple(c for c in COMPETENCIES if tier_of(c) == tier)

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
