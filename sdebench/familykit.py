"""Building blocks for family generators: the shared story every task tells.

A family supplies a `Story` (its code in four versions, tests, fact entries per source and
topical distractors); `assemble` turns it into a `TaskSpec` whose history has the same shape in
every placement:

    c0  initial import: base code, tests, memory artifacts (distractors + the K/F/X fact entry)
    c1  the rule's module appears: correct (H: message states the fact) or already buggy (others)
    ..  filler commits
    cR  a refactor: H regresses the rule here; elsewhere the same message with a fact-free diff
    cT  the failing repro test is added (HEAD)

Only the designated source carries the fact; every placement has the same artifact paths.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from sdebench.family import PAST_FIXES, PREFERENCES, Commit, Memory, TaskSpec

CONVENTIONS = "docs/CONVENTIONS.md"
AGENTS = "AGENTS.md"
ADR_DIR = "docs/adr"


@dataclass
class Story:
    """What one family variant contributes; see the module docstring for the history it yields."""

    package: str
    module: str  # repo path of the module holding the rule
    v1_correct: str  # the module when the rule was introduced, right
    v1_buggy: str  # the same with the bug (non-H placements start here)
    head_buggy: str  # the module at HEAD (after the refactor), buggy
    oracle: str  # head_buggy with the bug fixed
    conventional: str  # head_buggy with the conventional guess applied
    intro_msg_fact: str  # H: the commit that introduced the rule, stating the fact (part of it if split)
    intro_msg_plain: str  # elsewhere: the same commit, no fact
    refactor_msg: str  # the commit that regressed the rule in H (neutral wording)
    base_files: dict[str, str]  # other code and the existing suite (PASS_TO_PASS)
    repro_tests: dict[str, str]  # visible failing tests, added in the last commit
    hidden_tests: dict[str, str]
    # 'K' | 'F' | 'X' -> (artifact path, entry text), or a list of them to split a multi-part fact
    fact_entries: dict[str, tuple[str, str] | list[tuple[str, str]]]
    distractors: list[tuple[str, str]]  # (artifact path, entry) present in every placement
    filler: list[Commit] = field(default_factory=list)  # commits between the rule's introduction and the refactor
    extra_oracle: dict[str, str] = field(default_factory=dict)  # other files the fix changes
    repro_msg: str = "tests: add a failing repro for the reported bug"


def test_ids(files: dict[str, str]) -> tuple[str, ...]:
    """Node ids of the top-level `def test_*` functions in test files."""
    ids = []
    for path in sorted(files):
        for name in re.findall(r"^def (test_\w+)\(", files[path], flags=re.M):
            ids.append(f"{path}::{name}")
    return tuple(ids)


def standard_memory(project: str, package: str) -> Memory:
    """Artifact files every task carries, with process distractors that hold no fact."""
    m = Memory()
    m.header(AGENTS, f"# Notes for coding agents working on {project}")
    m.add(AGENTS, f"- Run the suite with `python -m pytest -q` from the repo root; `{package}` must stay importable.")
    m.add(AGENTS, "- Keep changes minimal and focused on the reported bug; do not reformat unrelated code.")
    m.add(AGENTS, "- Never edit or delete existing tests to make them pass.")
    m.header(CONVENTIONS, f"# {project} conventions")
    m.add(CONVENTIONS, "- Module names are lowercase nouns; public functions carry a one-line docstring.")
    m.add(CONVENTIONS, "- Log with the module logger, never print; errors raise ValueError with a message naming the input.")
    m.add(CONVENTIONS, "- Constants live at the top of the module that owns them, in UPPER_CASE.")
    m.header(f"{ADR_DIR}/0001-record-decisions.md", "# ADR-0001: Record architecture decisions\n\nStatus: Accepted")
    m.add(f"{ADR_DIR}/0001-record-decisions.md", "We record decisions that affect behaviour as short ADRs in docs/adr.")
    m.header(f"{ADR_DIR}/0002-testing.md", "# ADR-0002: pytest for every module\n\nStatus: Accepted")
    m.add(f"{ADR_DIR}/0002-testing.md", "Every module has a test file under tests/; tests use plain asserts.")
    m.header(PREFERENCES, "# Preferences and corrections from past reviews")
    m.add(PREFERENCES, "- (review of #88) Prefer small pure functions over classes with one method.")
    m.add(PREFERENCES, "- (review of #102) Please don't add new dependencies for one helper; the stdlib is fine.")
    m.add(PREFERENCES, "- (review of #131) Keep commit messages in the form `area: what changed`.")
    m.header(PAST_FIXES, "# Past fixes")
    m.add(PAST_FIXES, "## Off-by-one in pagination\nSymptom: the last page repeated one item. Fix: the slice end is exclusive; "
          "use `items[start:start + size]`.")
    m.add(PAST_FIXES, "## Flaky clock in tests\nSymptom: a test failed near midnight. Fix: tests take an injected clock "
          "instead of calling time.time().")
    return m


def assemble(
    story: Story,
    *,
    family: str,
    variant: int,
    source: str,
    bottleneck: str,
    project: str,
    statement: str,
    fact: str,
    fact_tokens: tuple[str, ...],
    conventional_guess: str,
    tags: tuple[str, ...] = (),
    description: str = "",
) -> TaskSpec:
    """The TaskSpec of `story` with the fact placed in `source`."""
    memory = standard_memory(project, story.package)
    for path, entry in story.distractors:
        memory.add(path, entry)
    entries = story.fact_entries.get(source, [])
    for path, entry in [entries] if isinstance(entries, tuple) else entries:
        memory.add(path, entry)
    artifacts = memory.render()
    is_h = source == "H"
    commits = [
        Commit("Initial import", {**story.base_files, **artifacts}),
        Commit(story.intro_msg_fact if is_h else story.intro_msg_plain,
               {story.module: story.v1_correct if is_h else story.v1_buggy}),
        *story.filler,
        Commit(story.refactor_msg, {story.module: story.head_buggy}),
        Commit(story.repro_msg, dict(story.repro_tests)),
    ]
    visible = {**story.base_files, **story.repro_tests}
    return TaskSpec(
        family=family,
        variant=variant,
        source=source,
        bottleneck=bottleneck,
        statement=statement,
        fact=fact,
        fact_tokens=fact_tokens,
        conventional_guess=conventional_guess,
        commits=tuple(commits),
        oracle_files={story.module: story.oracle, **story.extra_oracle},
        conventional_files={story.module: story.conventional},
        hidden_tests=dict(story.hidden_tests),
        fail_to_pass=test_ids(story.repro_tests),
        pass_to_pass=tuple(i for i in test_ids(visible) if i.split("::")[0] not in story.repro_tests),
        hidden_to_pass=test_ids(story.hidden_tests),
        tags=tags,
        description=description,
    )


def pick(rng_key: str, population: list) -> object:
    """A deterministic choice keyed by a string (never the global RNG)."""
    return random.Random(rng_key).choice(population)
