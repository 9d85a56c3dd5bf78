"""Kit for the hard tier: a rule that must be worked out of memory, not copied from one item.

A hard family tells its variant as a `Story` like any family, with three differences:

- the memory holds **several statements** of the rule: old values, values of another scope, an
  announced future value, parts of a composed value. Every statement that is not the fact is a
  *decoy*, present in every placement (same paths, same history shape); only the statement of the
  current rule (or each part of it) is placement-specific, and its tokens are the fact tokens
  (rule 1: they occur in the designated source only; a decoy value is never a fact token);
- the history is told as `Step`s: a commit whose message and files may differ in H (the fact's
  commit states the value there, elsewhere it is a neutral change of the same paths), so a rule can
  change several times over the history in every placement;
- the story names its `competency` (how the fact must be worked out; `COMPETENCIES`), and the
  family declares how a candidate value is spelled in memory (`spell`), which the naive readers of
  rule 8 and the leak checks share.

Rule 8 must hold in whatever a delivery shows (the whole corpus, five search hits, an injected
top ten, at any scale), so it cannot rest on how search ranks the items. A hard family therefore
writes every item that states the fact so that it defeats the naive readers *alone*: on one line,
a decoy value before the fact and again after it, any date written before the values. Such an item
gives top1 the decoy (first on its best line), latest the decoy (same date, later position) and
majority the decoy (more mentions); a composed fact (`synthesis`) is stated by no item at all.
`tests/generators/test_hard_families.py` checks this item by item, published and fresh.

The kit's history shape is kept: c0 initial import, c1 the rule's module appears (the same text in
every placement: a hard story's fact is never the first statement), the `before` steps, the
refactor that leaves the bug at HEAD, the `after` steps, the repro. Dates the statements carry
are written in the text (`iso`), so every placement reads the same timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from typing import Any

from sdebench.generation.facts import Draw
from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit
from sdebench.tasks.artifacts import COMPETENCIES, competencies_of

HARD = competencies_of("hard")


def iso(d: date) -> str:
    """A date as the memory writes it (ISO 8601, which the naive readers date mentions by)."""
    return d.isoformat()


@dataclass(frozen=True)
class Step:
    """One commit of a hard story's history: the same paths in every placement; in H the message
    and the files may state the fact (`h_message`, `h_files`), elsewhere they do not."""

    message: str
    files: Mapping[str, str | None]
    h_message: str | None = None
    h_files: Mapping[str, str | None] | None = None

    def __post_init__(self) -> None:
        if self.h_files is not None and set(self.h_files) != set(self.files):
            raise ValueError(f"step {self.message.splitlines()[0]!r}: H writes other paths than the other "
                             "placements (the history must have the same shape everywhere)")

    def commit(self, source: str) -> Commit:
        """The commit this step is in placement `source`."""
        if source == "H":
            return Commit(self.h_message or self.message, dict(self.h_files if self.h_files is not None else self.files))
        return Commit(self.message, dict(self.files))


@dataclass
class HardStory:
    """A hard variant's content; `story(source)` gives the kit's `Story` for one placement."""

    package: str
    module: str
    early: str  # the module as it first appears (c1), the same in every placement
    head_buggy: str
    oracle: str
    conventional: str
    intro_msg: str
    refactor_msg: str
    base_files: dict[str, str]
    repro_tests: dict[str, str]
    hidden_tests: dict[str, str]
    fact_entries: dict[str, tuple[str, str] | list[tuple[str, str]]]  # K/F/X: the fact's statements
    decoys: list[tuple[str, str]]  # (artifact path, entry) in every placement
    statement: str
    fact: str
    conventional_guess: str
    competency: str
    fact_tokens: tuple[str, ...] = ()  # () under `hard_family`: the family's spelling of the told fact
    before: list[Step] = field(default_factory=list)  # between c1 and the refactor
    after: list[Step] = field(default_factory=list)  # between the refactor and the repro
    tags: tuple[str, ...] = ()
    project: str = ""
    extra_oracle: dict[str, str] = field(default_factory=dict)  # other files the fix changes

    def __post_init__(self) -> None:
        if self.competency not in COMPETENCIES:
            raise ValueError(f"unknown competency {self.competency!r} (choose among {', '.join(COMPETENCIES)})")

    def story(self, source: str) -> Story:
        """The kit's story with the fact in `source` (H: the steps' H messages and files)."""
        return Story(
            package=self.package, module=self.module,
            v1_correct=self.early, v1_buggy=self.early, head_buggy=self.head_buggy,
            oracle=self.oracle, conventional=self.conventional,
            intro_msg_fact=self.intro_msg, intro_msg_plain=self.intro_msg, refactor_msg=self.refactor_msg,
            base_files=dict(self.base_files), repro_tests=dict(self.repro_tests),
            hidden_tests=dict(self.hidden_tests), fact_entries=dict(self.fact_entries),
            distractors=list(self.decoys),
            filler=[s.commit(source) for s in self.before],
            late_filler=[s.commit(source) for s in self.after],
            statement=self.statement, fact=self.fact, fact_tokens=tuple(self.fact_tokens),
            conventional_guess=self.conventional_guess,
            tags=tuple(self.tags), project=self.project, competency=self.competency,
            extra_oracle=dict(self.extra_oracle),
        )


def hard_prose(*sheets: str) -> dict[str, Any]:
    """The `HardStory` fields prose sheets fill (`prose.prose`): their text fields, the fact's entries
    and the decoys (the sheets' distractors, sheet by sheet), so a family's variants can share a sheet.
    The module's first commit states no fact in a hard story, so its message is `intro_msg_plain`."""
    out: dict[str, Any] = {}
    for sheet in sheets:
        for key, value in prose(sheet).items():
            key = {"intro_msg_plain": "intro_msg", "distractors": "decoys"}.get(key, key)
            if key == "intro_msg_fact":
                raise ValueError("hard_prose: a hard story's first commit is the same in every placement "
                                 "(intro_msg_plain)")
            if key == "decoys":
                out[key] = [*out.get(key, []), *value]
            elif key in out:
                raise ValueError(f"hard_prose: two sheets fill {key}")
            else:
                out[key] = value
    return out


def hard_family(family: str, description: str, draw: Draw, tells: Sequence[Callable[[Any, str], HardStory]],
                spell: Callable[[int, Any], Sequence[str]]) -> Family:
    """A hard family whose variant `v` is told by `tells[v](fact, source)`, placed in `source`; a
    story that names no fact tokens gets the family's spellings of its fact."""

    def tell(variant: int, fact: Any, source: str) -> Story:
        hard = tells[variant](fact, source)
        if not hard.fact_tokens:
            hard = replace(hard, fact_tokens=tuple(spell(variant, fact)))
        return hard.story(source)

    return Family(family=family, bottleneck="knowledge-missing", description=description,
                  variants=tuple(range(len(tells))), draw=draw, tell=tell, space=draw.space, by_source=True,
                  spell=spell)


def hard_versions(render: Callable[[Any, bool, bool], str], usual: Any, fact: Any,
                  conventional: Any = None) -> dict[str, str]:
    """The module's four versions as `HardStory` fields, from `render(value, buggy, refactored)`: it
    appears holding `usual`, the refactor adds the bug, the oracle removes it and holds `fact`, the
    conventional guess removes it and holds `conventional` (default: `usual`)."""
    guess = usual if conventional is None else conventional
    return {"early": render(usual, False, False), "head_buggy": render(usual, True, True),
            "oracle": render(fact, False, True), "conventional": render(guess, False, True)}


def dated_table(name: str, rows: Iterable[tuple[date, Any]], func: str, arg: str, doc: str, column: str,
                missing: str, *, value: Callable[[Any], str] | None = None, checked: bool = False) -> str:
    """Source of a dated table `name` of (in force from, value) rows and of `func(arg)`, the value of its
    last row not after the date `arg` (`missing`, then the date, is the error before the first row);
    `checked` rejects an `arg` that is not a date first. A value is written by `value` (default: a
    Decimal as `decimal_literal`, anything else as `str`)."""
    def literal(v: Any) -> str:
        if value is not None:
            return value(v)
        return decimal_literal(v) if isinstance(v, Decimal) else str(v)

    table = "\n".join(f"    (date({d.year}, {d.month}, {d.day}), {literal(v)})," for d, v in rows)
    guard = f'    if not isinstance({arg}, date):\n        raise TypeError("{arg} must be a date")\n' if checked else ""
    return (f"{name} = (\n{table}\n)\n\n\n"
            f"def {func}({arg}):\n"
            f'    """{doc}"""\n'
            f"{guard}    current = None\n"
            f"    for start, {column} in {name}:\n"
            f"        if start <= {arg}:\n"
            f"            current = {column}\n"
            "    if current is None:\n"
            f'        raise ValueError(f"{missing} {{{arg}}}")\n'
            "    return current\n")


def decimal_literal(value: Decimal, places: int = 2) -> str:
    """`value` as the source of a Decimal with `places` decimals: `Decimal("2.35")`."""
    return f'Decimal("{value:.{places}f}")'
