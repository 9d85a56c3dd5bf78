"""The size knob of the large-repo families: one story told among filler of any size.

An exploration-heavy family hides its rule module in one subpackage of a package padded with
filler modules and commits (`sdebench.generation.kit.make_filler`). The family tells its story
without the filler (`story(variant, fact)`: its code, tests and memory, with the rule module under
the filler subpackage `home`); a `SizedStory` draws the variant's filler at a size, adds its files
to the initial import and its commits around the regressing refactor (the last 30 % after it, so
the regression is not the latest change), and gives the two tellers a `Family` takes:

    SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes={0: "default", 2: "large"},
                              avoid=lambda v: tokens(fact(v)), tokens=lambda v, f: tokens(f))
    GENERATOR = Family(..., tell=SIZED.tell, tell_sized=SIZED.tell_sized)

The filler avoids the tokens of the variant's drawn fact (`avoid`), so every candidate the prober
renders shares one cached filler; without `avoid` it avoids the told fact's tokens, redrawn only
when the filler that avoids nothing holds one. Fillers are cached per fresh set (`per_set_cache`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sdebench.generation.kit import Filler, FillerVocab, Story, filler_size, make_filler
from sdebench.generation.seeded import per_set_cache
from sdebench.tasks.tokens import normalise

Size = str | tuple[int, int]


@dataclass(frozen=True)
class SizedStory:
    """A large-repo family's story and how its filler is drawn, per variant."""

    family: str  # keys the filler's draw, with the variant
    story: Callable[[int, Any], Story]  # (variant, fact) -> the story without filler
    vocab: Callable[[int], FillerVocab]  # the variant's filler vocabulary (its package is the story's)
    home: Callable[[int], str]  # the filler subpackage (under the package) that holds the rule module
    sizes: Mapping[int, Size] = field(default_factory=dict)  # variant -> its size (default: "default")
    avoid: Callable[[int], tuple[str, ...]] | None = None  # variant -> tokens the filler avoids (None: the told fact's)
    # (variant, fact) -> the fact's tokens, for a story that names none
    tokens: Callable[[int, Any], Sequence[str]] | None = None

    @classmethod
    def shaped(cls, family: str, story: Callable[[int, Any], Story], shapes: Mapping[int, Any],
               homes: Mapping[int, str], **kw: Any) -> SizedStory:
        """Variant `v` takes the shape `shapes[v % len(shapes)]` (its `vocab` is the filler's) and the
        home `homes[v % len(homes)]`."""
        return cls(family, story, vocab=lambda v: shapes[v % len(shapes)].vocab,
                   home=lambda v: homes[v % len(homes)], **kw)

    def layout(self, variant: int, rule_module: str) -> tuple[str, str, str]:
        """(package, path of the module `rule_module` in the variant's home subpackage, its dotted name)."""
        package = self.vocab(variant).package
        path = f"{package}/{self.home(variant)}/{rule_module}.py"
        return package, path, path.removesuffix(".py").replace("/", ".")

    def size(self, variant: int) -> Size:
        """The variant's own size: a name in `kit.FILLER_SIZES` or (modules, commits)."""
        return self.sizes.get(variant, "default")

    def tell(self, variant: int, fact: Any) -> Story:
        """The story of one variant at its own size."""
        return self.tell_sized(variant, fact, self.size(variant))

    def tell_sized(self, variant: int, fact: Any, size: Size) -> Story:
        """The story of one variant with filler of `size`."""
        story = self.story(variant, fact)
        if not story.fact_tokens and self.tokens is not None:
            story = replace(story, fact_tokens=tuple(self.tokens(variant, fact)))
        return with_filler(story, self.filler(variant, size, tuple(story.fact_tokens)))

    def filler(self, variant: int, size: Size, told: tuple[str, ...] = ()) -> Filler:
        """The variant's filler at `size`, free of the avoided tokens (`told`: the told fact's tokens)."""
        modules, commits = filler_size(size)
        args = (self.vocab(variant), f"{self.family}-{variant}", modules, commits)
        include = (self.home(variant),)
        if self.avoid is not None:
            return _filler(*args, self.avoid(variant), include)
        plain, text = _plain_filler(*args, include)
        # The kit redraws only the pieces holding a token, so when the plain filler holds none it is
        # exactly the avoiding one (and candidates render fast).
        if not any(normalise(t) in text for t in told):
            return plain
        return make_filler(*args, avoid=told, include=include)


def with_filler(story: Story, filler: Filler) -> Story:
    """`story` with `filler`'s files in its initial import and its commits around the refactor."""
    home = filler.packages[0]
    if not story.module.startswith(home + "/"):
        raise ValueError(f"the rule module {story.module} is not in the filler's subpackage {home}")
    early, late = filler.split()
    return replace(story, base_files={**story.base_files, **filler.files}, filler=[*story.filler, *early],
                   late_filler=[*late, *story.late_filler])


@per_set_cache
def _filler(vocab: FillerVocab, key: str, modules: int, commits: int, avoid: tuple[str, ...],
            include: tuple[str, ...]) -> Filler:
    return make_filler(vocab, key, modules, commits, avoid=avoid, include=include)


@per_set_cache
def _plain_filler(vocab: FillerVocab, key: str, modules: int, commits: int,
                  include: tuple[str, ...]) -> tuple[Filler, str]:
    """The filler avoiding nothing, and its normalised text (paths, files, messages)."""
    filler = make_filler(vocab, key, modules, commits, include=include)
    parts = [*filler.files, *filler.files.values()]
    for c in filler.commits:
        parts += [c.message, *c.files, *(v or "" for v in c.files.values())]
    return filler, normalise("\n".join(parts))
