"""Fresh private task sets: every family re-emitted from a secret seed (docs/fresh.md).

A lab keeps SEED private and publishes its digest with its results; anyone given the seed
regenerates the same tasks byte for byte and checks the digest. What the seed decides, per family
variant, each from its own key (so no output of one draw says anything about another):

- the fact, drawn from the family's declared fact space (`FactSpace.sample`), never one of the
  published set's facts (a model that memorised those gains nothing);
- the project's names (its package and project name), renamed to fresh words across every file,
  path, commit message, test id and text of the spec;
- the filler of exploration-heavy repos and the order of the entries of every memory artifact
  (the kit mixes a per-variant salt into its keyed draws: `sdebench.generation.seeded`).

The seed is stretched with scrypt (memory-hard) into a master key; the published digest and the
generation key are two HMACs of it, so the digest reveals neither the seed nor anything generated
from it, and no generated text (names, filler) reveals the generation key. The seed and the keys
are never written anywhere: tasks carry only the digest.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import keyword
import math
import random
import re
import secrets
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sdebench.errors import GenerationError
from sdebench.generation.seeded import salted
from sdebench.generation.spec import Commit, TaskSpec
from sdebench.tasks.record import DIGEST_SCHEME

SCHEME = DIGEST_SCHEME  # the digest's scheme tag: scrypt parameters and derivation labels below
_SALT = b"sdebench fresh task set v1"
_SCRYPT = {"n": 2**15, "r": 8, "p": 1, "maxmem": 64 * 2**20, "dklen": 32}
MIN_BITS = 128  # a seed must carry at least this much estimated entropy


class SeedError(GenerationError, ValueError):
    """A seed that cannot key a private set (the message never contains the seed)."""


def seed_bits(seed: str) -> float:
    """A conservative entropy estimate: length x the empirical entropy of its characters, over its
    shortest repeating unit (a repeated string is no stronger than one copy)."""
    period = next((p for p in range(1, len(seed) + 1) if seed == (seed[:p] * (len(seed) // p + 1))[:len(seed)]), 0)
    unit = seed[:period]
    if not unit:
        return 0.0
    counts = Counter(unit)
    per_char = -sum(c / len(unit) * math.log2(c / len(unit)) for c in counts.values())
    return max(0.0, len(unit) * per_char)


def check_seed(seed: str) -> None:
    """Refuse a seed too weak to keep private (short, repetitive, or with control characters)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in seed):
        raise SeedError("the seed contains control characters or line breaks")
    bits = seed_bits(seed)
    if bits < MIN_BITS:
        raise SeedError(f"the seed is too weak ({len(seed)} characters, about {bits:.0f} bits; at least "
                        f"{MIN_BITS} needed): make one with `python -m sdebench.generate --new-seed`")


def read_seed(arg: str) -> str:
    """The seed an argument names: `@PATH` reads a file, `-` stdin (one line), anything else is the seed."""
    if arg == "-":
        return sys.stdin.readline().rstrip("\r\n")
    if arg.startswith("@"):
        try:
            return Path(arg[1:]).read_text().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as e:
            raise SeedError(f"cannot read the seed file {arg[1:]}: {type(e).__name__}") from None
    return arg


def new_seed() -> str:
    """A fresh random seed (256 bits)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class SetKey:
    """What a seed yields: the public digest and the private generation key (never printed)."""

    digest: str
    key: bytes = field(repr=False)

    def token(self, *labels: object) -> bytes:
        """A 32-byte key for one purpose, named by `labels`."""
        return hmac.new(self.key, "\0".join(map(str, labels)).encode(), hashlib.sha256).digest()

    def rng(self, *labels: object) -> random.Random:
        """An RNG of its own for one purpose (outputs of one never reveal another's state)."""
        return random.Random(int.from_bytes(self.token(*labels), "big"))


def derive(seed: str) -> SetKey:
    """The digest and generation key of a seed (checked first: a weak seed raises SeedError)."""
    check_seed(seed)
    master = hashlib.scrypt(seed.encode(), salt=_SALT, **_SCRYPT)
    digest = hmac.new(master, b"digest", hashlib.sha256).hexdigest()
    return SetKey(f"{SCHEME}:{digest}", hmac.new(master, b"generate", hashlib.sha256).digest())


# --- fresh names ----------------------------------------------------------------------------------

_FIRST = ("amber", "birch", "cedar", "cinder", "clover", "cobalt", "coral", "dune", "ember", "fern", "flint",
          "frost", "garnet", "hazel", "heron", "indigo", "juniper", "kestrel", "lark", "linden", "maple", "marsh",
          "moss", "nimbus", "opal", "quartz", "raven", "rowan", "saffron", "slate", "sorrel", "tansy", "thistle",
          "umber", "willow", "wren")
_SECOND = ("bay", "brook", "crest", "dale", "field", "ford", "gate", "glen", "grove", "haven", "hollow", "keep",
           "knoll", "lake", "ledge", "mead", "mere", "mill", "moor", "point", "reach", "ridge", "shore", "stead",
           "stone", "vale", "ward", "well", "wick", "yard")
# Names a package must never take: they would shadow or be shadowed by something the tests import.
RESERVED = frozenset({"tests", "test", "conftest", "pytest", "sdebench", "setup", "main", "src", "docs", "lib"})


def name_pool() -> list[str]:
    """Every fresh name: two-word compounds, none a keyword, builtin or stdlib module (checked)."""
    pool = [a + b for a in _FIRST for b in _SECOND]
    bad = set(pool) & (set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
                       | set(sys.stdlib_module_names) | RESERVED)
    if bad:
        raise RuntimeError(f"the fresh name pool holds reserved names: {sorted(bad)[:3]}")
    return pool


_WORD = re.compile(r"[A-Za-z0-9_]+")


def spec_texts(spec: TaskSpec) -> list[str]:
    """Every text of a spec: paths, contents, messages, statements, tokens, test ids."""
    out = [spec.statement, spec.fact, spec.conventional_guess, spec.description, *spec.fact_tokens,
           *spec.fail_to_pass, *spec.pass_to_pass, *spec.hidden_to_pass]
    for c in spec.commits:
        out.append(c.message)
        for p, text in c.files.items():
            out += [p, text or ""]
    for files in (spec.oracle_files, spec.conventional_files, spec.hidden_tests):
        for p, text in files.items():
            out += [p, text]
    return out


def project_names(spec: TaskSpec) -> list[str]:
    """The names a fresh set renames: the spec's declared names and the top-level code packages."""
    tops = {p.split("/", 1)[0] for c in spec.commits for p in c.files if "/" in p and p.endswith(".py")}
    found = [*spec.names, *sorted(t for t in tops if t.isidentifier() and t not in RESERVED)]
    return [n for n in dict.fromkeys(found) if n and n not in RESERVED]


def choose_names(originals: list[str], rng: random.Random, taken: set[str]) -> dict[str, str]:
    """A fresh name per original, distinct, and never a word already used anywhere (case-folded)."""
    free = [n for n in name_pool() if n not in taken]
    if len(free) < len(originals):
        raise ValueError("the fresh name pool is exhausted for this spec")
    return dict(zip(originals, rng.sample(free, len(originals)), strict=True))


def _forms(mapping: dict[str, str]) -> dict[str, str]:
    """Each original and its capitalised spelling (a class or a title) -> the fresh one."""
    forms = {}
    for old, new in mapping.items():
        forms[old] = new
        if old[:1].islower():
            forms.setdefault(old[:1].upper() + old[1:], new.capitalize())
    return forms


def renamer(mapping: dict[str, str]):
    """A function replacing every whole-word occurrence of the originals (longest first)."""
    forms = _forms(mapping)
    if not forms:
        return lambda text: text
    alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9_])({alts})(?![A-Za-z0-9_])")
    return lambda text: pattern.sub(lambda m: forms[m.group(1)], text)


def rename(spec: TaskSpec, mapping: dict[str, str]) -> TaskSpec:
    """The spec with the project's names replaced everywhere (paths, contents, messages, ids, texts)."""
    words = {w.casefold() for t in spec_texts(spec) for w in _WORD.findall(t)}
    clash = {new for new in mapping.values() if new in words}
    if clash:
        raise ValueError(f"fresh name {sorted(clash)[0]!r} is already a word of the task")
    sub = renamer(mapping)

    def files(d: dict) -> dict:
        return {sub(p): (sub(t) if t is not None else None) for p, t in d.items()}

    return replace(
        spec,
        statement=sub(spec.statement),
        fact=sub(spec.fact),
        fact_tokens=tuple(sub(t) for t in spec.fact_tokens),
        conventional_guess=sub(spec.conventional_guess),
        commits=tuple(Commit(sub(c.message), files(c.files)) for c in spec.commits),
        oracle_files=files(spec.oracle_files),
        conventional_files=files(spec.conventional_files),
        hidden_tests=files(spec.hidden_tests),
        fail_to_pass=tuple(sub(i) for i in spec.fail_to_pass),
        pass_to_pass=tuple(sub(i) for i in spec.pass_to_pass),
        hidden_to_pass=tuple(sub(i) for i in spec.hidden_to_pass),
        description=sub(spec.description),
        names=tuple(sub(n) for n in spec.names),
    )


# --- a family, fresh -----------------------------------------------------------------------------


def declares_space(gen: Any) -> bool:
    """Whether a family can be emitted fresh: it declares a fact space and builds any fact."""
    from sdebench.generation.probe import declares_space as probe_declares

    return probe_declares(gen)


class FreshFamily:
    """A family seen through a set key: same variants and rules, fresh facts, names and draws.

    Satisfies what the engine, the prober and the readers need (`build(variant, source, fact=)`,
    `fact`, `space`, `render`, `spellings`), so rules 1-8 are checked on the fresh tasks exactly as
    on the published ones.
    """

    def __init__(self, gen: Any, setkey: SetKey):
        if not declares_space(gen):
            raise ValueError(f"{gen.family}: declares no fact space; a fresh set needs one")
        self.gen, self.setkey = gen, setkey
        self.family, self.bottleneck = gen.family, gen.bottleneck
        self.variants, self.description = tuple(gen.variants), gen.description
        self.space = gen.space
        self._facts: dict[int, Any] = {}
        self._names: dict[int, dict[str, str]] = {}

    def fact(self, variant: int) -> Any:
        """The variant's fresh fact: the family's draw, redrawn while it is a published fact."""
        if variant not in self._facts:
            published = {_key(self.gen.fact(v)) for v in self.variants}
            rng = self.setkey.rng("fact", self.family, variant)
            for _ in range(10_000):
                value = self.space.sample(rng)
                if _key(value) not in published:
                    self._facts[variant] = value
                    break
            else:
                raise ValueError(f"{self.family} v{variant}: the draw yields only published facts")
        return self._facts[variant]

    def _salt(self, variant: int) -> str:
        return self.setkey.token("kit", self.family, variant).hex()

    def _build_raw(self, variant: int, source: str, fact: Any) -> TaskSpec:
        with salted(self._salt(variant)):
            return self.gen.build(variant, source, fact=fact)

    def names(self, variant: int) -> dict[str, str]:
        """Original name -> fresh name for a variant (chosen once, from its no-memory placement)."""
        if variant not in self._names:
            base = self._build_raw(variant, "none", self.fact(variant))
            taken = {w.casefold() for t in spec_texts(base) for w in _WORD.findall(t)}
            self._names[variant] = choose_names(project_names(base), self.setkey.rng("names", self.family, variant),
                                                taken)
        return self._names[variant]

    def build(self, variant: int, source: str, fact: Any = None) -> TaskSpec:
        """The fresh spec of one variant with the fact in `source` (`fact` replaces the fresh one)."""
        spec = self._build_raw(variant, source, self.fact(variant) if fact is None else fact)
        return replace(rename(spec, self.names(variant)), set_digest=self.setkey.digest)

    def render(self, variant: int, value: Any) -> dict[str, str]:
        """The fix a perfect agent believing `value` writes, in the fresh names."""
        if callable(getattr(self.gen, "render", None)):
            with salted(self._salt(variant)):
                files = self.gen.render(variant, value)
            sub = renamer(self.names(variant))
            return {sub(p): sub(t) for p, t in files.items()}
        return dict(self.build(variant, "none", fact=value).oracle_files)

    def spellings(self, variant: int, value: Any) -> tuple[str, ...]:
        """How the candidate `value` is written in the fresh set's memory text (the family's spellings, renamed)."""
        if callable(getattr(self.gen, "spellings", None)):
            with salted(self._salt(variant)):
                words = self.gen.spellings(variant, value)
            sub = renamer(self.names(variant))
            return tuple(sub(w) for w in words)
        return tuple(self.build(variant, "none", fact=value).fact_tokens)


def _key(value: Any) -> str:
    return repr(value)
