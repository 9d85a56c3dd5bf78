"""A task family as a declarative spec: its fact space, its draw, and what each variant tells.

A family module in `generators/` defines `GENERATOR = Family(...)`: the metadata, the fact space
(rule 7), `draw(variant)` (the variant's fact, as the family draws it) and `tell(variant, fact)`,
the variant's content as one `Story` (code in its four versions, tests, memory entries, distractors,
statement). Everything else (the history's shape, the artifact files, the test ids, the TaskSpec)
is the kit's: a family is content, not plumbing. `build(variant, source, fact=...)` renders any
candidate fact, which is what the prober and rule 7 need; `spellings(variant, value)` says how any
candidate is written in memory text, which is what the naive memory readers and rule 8 need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sdebench.generation.facts import FactSpace
from sdebench.generation.kit import Story, assemble, oracle_files
from sdebench.generation.spec import TaskSpec


@dataclass(frozen=True)
class Family:
    """One task family as data; satisfies the `Generator` protocol."""

    family: str
    bottleneck: str
    description: str
    variants: Sequence[int]
    draw: Callable[[int], Any]  # variant -> its fact
    tell: Callable[..., Story]  # (variant, fact[, source]) -> the variant's story
    space: FactSpace | None = None  # None: rule 7 unchecked (reported as such)
    # True: `tell(variant, fact, source)`, for a story that differs by placement beyond what the kit
    # places (a split fact whose second part, in H, lives in a filler commit's message).
    by_source: bool = False
    # (variant, fact, size) -> the story with filler of `size`: the size knob of the large-repo
    # families (`tell` is this at the variant's own size).
    tell_sized: Callable[..., Story] | None = None
    # (variant, value) -> how the candidate `value` is spelled in memory text: the naive memory
    # readers (sdebench.generation.readers) find its mentions with these. None: the fact tokens of
    # the story told with that candidate (`tell(variant, value)`), which every family declares.
    spell: Callable[[int, Any], Sequence[str]] | None = None

    def fact(self, variant: int) -> Any:
        """The variant's drawn fact."""
        return self.draw(variant)

    def spellings(self, variant: int, value: Any) -> tuple[str, ...]:
        """How the candidate `value` of a variant is written in memory text (`spell`, else its fact tokens)."""
        if self.spell is not None:
            return tuple(self.spell(variant, value))
        return tuple(self._story(variant, value, "none").fact_tokens)

    def render(self, variant: int, fact: Any) -> dict[str, str]:
        """The oracle files of the variant with `fact` (what `build(...).oracle_files` holds,
        without assembling the history: the prober renders every candidate)."""
        return oracle_files(self._story(variant, fact, "none"))

    def _story(self, variant: int, fact: Any, source: str) -> Story:
        return self.tell(variant, fact, source) if self.by_source else self.tell(variant, fact)

    def build_sized(self, variant: int, source: str, size: str | tuple[int, int], fact: Any = None) -> TaskSpec:
        """`build` with filler of `size` (a named size or (modules, commits)), for families with a size knob."""
        if self.tell_sized is None:
            raise ValueError(f"{self.family}: has no size knob")
        told = self.tell_sized
        return replace(self, tell=lambda v, f: told(v, f, size)).build(variant, source, fact)

    def build(self, variant: int, source: str, fact: Any = None) -> TaskSpec:
        """The spec of one variant with the fact in `source` (`fact` replaces the drawn one)."""
        value = self.draw(variant) if fact is None else fact
        story = self._story(variant, value, source)
        missing = [f for f in ("statement", "fact", "conventional_guess") if not getattr(story, f)]
        if missing or not story.fact_tokens:
            raise ValueError(f"{self.family} v{variant}: the story lacks {', '.join(missing) or 'fact_tokens'}")
        return assemble(
            story,
            family=self.family,
            variant=variant,
            source=source,
            bottleneck=self.bottleneck,
            project=story.project or story.package,
            statement=story.statement,
            fact=story.fact,
            fact_tokens=tuple(story.fact_tokens),
            conventional_guess=story.conventional_guess,
            tags=tuple(story.tags),
            description=self.description,
        )

