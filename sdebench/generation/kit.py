"""Building blocks for family generators: the shared story every task tells.

A family supplies a `Story` (its code in four versions, tests, fact entries per source and
topical distractors); `assemble` turns it into a `TaskSpec` whose history has the same shape in
every placement:

    c0  initial import: base code, tests, memory artifacts (distractors + the K/F/X fact entry)
    c1  the rule's module appears: correct (H: message states the fact) or already buggy (others)
    ..  filler commits
    cR  a refactor: H regresses the rule here; elsewhere the same message with a fact-free diff
    ..  late filler commits (optional; exploration-heavy families bury the refactor under them)
    cT  the failing repro test is added (HEAD)

Only the designated source carries the fact; every placement has the same artifact paths.
"""

from __future__ import annotations

import bisect
import random
import re
from dataclasses import dataclass, field

from sdebench.generation.observe import ObservationTests, observation_files  # noqa: F401 - the families' kit
from sdebench.generation.seeded import salted_key
from sdebench.generation.spec import Commit, Memory, TaskSpec
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES
from sdebench.tasks.tokens import find_tokens

CONVENTIONS = "docs/CONVENTIONS.md"
AGENTS = "AGENTS.md"
ADR_DIR = "docs/adr"
# A test-file helper the families that observe long sweeps emit into their held-out tests: the
# list run-length encoded, losslessly, so a candidate's observation is small to send and compare.
RUNS_SOURCE = '''def runs(values):
    """The list run-length encoded, losslessly: (index, value) where a run of equal values (same
    type, equal) starts."""
    out = []
    for i, v in enumerate(values):
        if not out or type(v) is not type(out[-1][1]) or v != out[-1][1]:
            out.append((i, v))
    return out
'''


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
    # Held-out tests, assert-style: inputs on the left of each `==`, the expected value on the
    # right (or `observe(value)` calls where an expected value is awkward); they become
    # observation tests (sdebench.generation.observe), so the right sides never reach a sandbox.
    # No expected value may live anywhere else in the file (tables, constants), and inputs that
    # single out the fact (a boundary probe) should be a neutral sweep instead.
    hidden_tests: dict[str, str]
    # 'K' | 'F' | 'X' -> (artifact path, entry text), or a list of them to split a multi-part fact
    fact_entries: dict[str, tuple[str, str] | list[tuple[str, str]]]
    distractors: list[tuple[str, str]]  # (artifact path, entry) present in every placement
    filler: list[Commit] = field(default_factory=list)  # commits between the rule's introduction and the refactor
    extra_oracle: dict[str, str] = field(default_factory=dict)  # other files the fix changes
    repro_msg: str = "tests: add a failing repro for the reported bug"
    # Filler committed after the regressing refactor, so the regression is not the latest change.
    late_filler: list[Commit] = field(default_factory=list)
    # What the task says (read by `sdebench.generation.family.Family`; `assemble` takes them as arguments).
    statement: str = ""  # the issue as the agent reads it
    fact: str = ""  # the fact in one sentence (answer key; never shown)
    fact_tokens: tuple[str, ...] = ()  # every spelling that would reveal the fact
    conventional_guess: str = ""  # what an agent without the memory would write
    tags: tuple[str, ...] = ()
    project: str = ""  # the project's name in the artifacts (default: the package)
    # How the fact must be worked out of memory (sdebench.tasks.artifacts.COMPETENCIES): `recall` when
    # one item states it; a hard competency otherwise (rule 8 then checks the naive readers fail).
    competency: str = "recall"


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


def oracle_files(story: Story) -> dict[str, str]:
    """The files the oracle fix of `story` writes."""
    return {story.module: story.oracle, **story.extra_oracle}


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
    """The TaskSpec of `story` with the fact placed in `source` (its competency is the story's)."""
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
        *story.late_filler,
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
        oracle_files=oracle_files(story),
        conventional_files={story.module: story.conventional},
        hidden_tests=dict(story.hidden_tests),
        fail_to_pass=test_ids(story.repro_tests),
        pass_to_pass=tuple(i for i in test_ids(visible) if i.split("::")[0] not in story.repro_tests),
        hidden_to_pass=test_ids(story.hidden_tests),
        tags=tags,
        description=description,
        names=tuple(dict.fromkeys((project, story.package))),
        competency=story.competency,
    )


def pick(rng_key: str, population: list) -> object:
    """A deterministic choice keyed by a string (never the global RNG)."""
    return random.Random(rng_key).choice(population)


def pick_distinct(rng_key: str, population: list, count: int) -> list:
    """`count` distinct members, chosen deterministically by a string key."""
    return random.Random(rng_key).sample(population, count)


def noted_commit(source: str, message: str, h_note: str, files: dict[str, str | None]) -> Commit:
    """A filler commit whose message, in H only, carries `h_note` (one part of a split fact) as a
    second paragraph: a multi-hop fact's second part lives in another commit than its first."""
    if source == "H" and h_note:
        return Commit(f"{message}\n\n{h_note}", files)
    return Commit(message, files)


# --- realistic filler for exploration-heavy families -----------------------------------------
#
# An exploration-heavy task hides its bug in one module among many, under a long history. The
# filler supplies the many: modules of plausible domain code (functions, small classes, docstrings)
# and commits that evolve them with ordinary messages. Everything is drawn from a random.Random
# keyed by a string (family, variant, size), so the same key always yields the same bytes, and no
# drawn piece may contain a fact token: pieces that do are re-drawn, which makes the filler avoid
# the fact by construction whatever the fact's spelling.

FILLER_TEST = "tests/test_modules_import.py"
# Named sizes of exploration-heavy repos: (filler modules, filler commits).
FILLER_SIZES = {"small": (8, 40), "default": (24, 150), "large": (50, 500)}


def filler_size(size: str | tuple[int, int]) -> tuple[int, int]:
    """(modules, commits) of a named size or an explicit pair; a clear error otherwise."""
    if isinstance(size, str):
        if size not in FILLER_SIZES:
            raise ValueError(f"unknown filler size {size!r} (choose among {', '.join(FILLER_SIZES)} or a pair)")
        return FILLER_SIZES[size]
    modules, commits = size
    if modules < 1 or commits < 0:
        raise ValueError(f"filler size needs modules >= 1 and commits >= 0, got {size!r}")
    return int(modules), int(commits)


@dataclass(frozen=True)
class FillerVocab:
    """Domain words a family lends its filler: what the code talks about."""

    package: str  # the family's top-level package; filler lives in its subpackages
    nouns: tuple[str, ...]  # entities, singular snake_case ("shipment", "bin")
    numbers: tuple[str, ...]  # numeric record fields ("quantity", "weight_kg")
    labels: tuple[str, ...]  # text record fields ("region", "carrier")
    areas: tuple[str, ...]  # subpackage topics ("receiving", "audit", "reports")


@dataclass(frozen=True)
class Filler:
    """Filler modules as of the initial import, and the commits that evolve them."""

    files: dict[str, str]  # initial files (modules, __init__ files, the import smoke test)
    commits: tuple[Commit, ...]
    modules: tuple[str, ...]  # every filler module path at HEAD
    packages: tuple[str, ...]  # the filler subpackage dirs ("pkg/area"), a family's rule may hide in one

    def split(self, late_share: float = 0.3) -> tuple[list[Commit], list[Commit]]:
        """The commits as (Story.filler, Story.late_filler): the last `late_share` go after the refactor."""
        cut = len(self.commits) - round(len(self.commits) * late_share)
        return list(self.commits[:cut]), list(self.commits[cut:])


@dataclass(frozen=True)
class _Unit:
    """One top-level definition of a filler module: template, name and the draws that shape it."""

    template: str
    name: str
    seed: int
    style: int


_MODULE_KINDS = ("rules", "store", "index", "report", "parser", "export", "audit", "sync", "metrics",
                 "schema", "checks", "batching", "lookup", "summary", "history", "format", "filters", "snapshot")


def _title(word: str) -> str:
    return "".join(p.capitalize() for p in word.split("_"))


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "sh", "ch")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _t_total(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    num, key = r.choice(v.numbers), r.choice(v.labels)
    name = f"total_{num}_by_{key}"
    doc = r.choice([f"Sum `{num}` per `{key}` over dict records.", f"Totals of `{num}` grouped by `{key}`.",
                    f"Aggregate `{num}` for each distinct `{key}`; missing values count as zero."])
    if style % 2:
        body = (f"    totals = defaultdict(int)\n    for record in records:\n"
                f"        totals[record.get(\"{key}\")] += record.get(\"{num}\", 0)\n    return dict(totals)\n")
        return name, f"def {name}(records):\n    \"\"\"{doc}\"\"\"\n{body}", {"from collections import defaultdict"}
    body = (f"    totals = {{}}\n    for record in records:\n        k = record.get(\"{key}\")\n"
            f"        totals[k] = totals.get(k, 0) + record.get(\"{num}\", 0)\n    return totals\n")
    return name, f"def {name}(records):\n    \"\"\"{doc}\"\"\"\n{body}", set()


def _t_threshold(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    num, noun = r.choice(v.numbers), r.choice(v.nouns)
    const = f"{num.upper()}_{r.choice(['LIMIT', 'CEILING', 'WARN_LEVEL', 'THRESHOLD'])}"
    value = r.choice([r.randint(2, 60) * r.choice([1, 5, 10]), round(r.uniform(0.5, 40), 1)])
    name = f"{_plural(noun)}_over_{r.choice(['limit', 'threshold', 'ceiling'])}"
    cmp = ">" if style % 2 else ">="
    code = (f"{const} = {value}\n\n\n"
            f"def {name}({_plural(noun)}, limit={const}):\n"
            f"    \"\"\"The {_plural(noun)} whose `{num}` is {'above' if cmp == '>' else 'at or above'} `limit`.\"\"\"\n"
            f"    return [item for item in {_plural(noun)} if item.get(\"{num}\", 0) {cmp} limit]\n")
    return name, code, set()


def _t_normalise(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    label = r.choice(v.labels)
    name = f"normalise_{label}"
    sep = r.choice(["-", "_", "."])
    steps = ["value.strip()", f"value.strip().replace(\" \", \"{sep}\")",
             f"\"{sep}\".join(value.split())"][style % 3]
    case = r.choice([".lower()", ".upper()", ".casefold()"])
    code = (f"def {name}(value):\n"
            f"    \"\"\"Canonical form of a `{label}`: trimmed, inner blanks joined by '{sep}', one case.\"\"\"\n"
            f"    if value is None:\n        return \"\"\n"
            f"    return {steps}{case}\n")
    return name, code, set()


def _t_chunks(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    size = r.choice([8, 16, 25, 32, 50, 64, 128, 200, 250])
    name = f"batch_{_plural(noun)}"
    if style % 2:
        body = "    for start in range(0, len(items), size):\n        yield items[start:start + size]\n"
    else:
        body = ("    batch = []\n    for item in items:\n        batch.append(item)\n        if len(batch) == size:\n"
                "            yield batch\n            batch = []\n    if batch:\n        yield batch\n")
    code = (f"def {name}(items, size={size}):\n"
            f"    \"\"\"Yield {_plural(noun)} in lists of at most `size`, keeping their order.\"\"\"\n"
            f"    if size < 1:\n        raise ValueError(f\"batch size must be positive, got {{size}}\")\n{body}")
    return name, code, set()


def _t_record(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    name = _title(noun) + r.choice(["Record", "Entry", "Row", "Summary", "Line"])
    label, num = r.choice(v.labels), r.choice(v.numbers)
    extra = r.choice([n for n in v.numbers if n != num] or [num + "_total"])
    method = [
        f"    def is_empty(self):\n        \"\"\"Whether the {noun} carries no {num}.\"\"\"\n        return not self.{num}\n",
        f"    def ratio(self):\n        \"\"\"`{num}` per unit of `{extra}` (0 when `{extra}` is 0).\"\"\"\n"
        f"        return self.{num} / self.{extra} if self.{extra} else 0.0\n",
        f"    def describe(self):\n        \"\"\"A one-line human description.\"\"\"\n"
        f"        return f\"{noun} {{self.{label}}}: {{self.{num}}}\"\n",
    ][style % 3]
    code = (f"@dataclass\nclass {name}:\n    \"\"\"One {noun} as the {r.choice(v.areas)} code sees it.\"\"\"\n\n"
            f"    {label}: str\n    {num}: float = 0.0\n    {extra}: float = 0.0\n\n{method}")
    if extra == num:
        code = code.replace(f"    {extra}: float = 0.0\n", "", 1).replace(f"    {num}: float = 0.0\n", f"    {num}: float = 0.0\n", 1)
    return name, code, {"from dataclasses import dataclass"}


def _t_parse(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    fields = r.sample(list(v.labels) + list(v.numbers), k=min(3, len(v.labels) + len(v.numbers)))
    sep = r.choice(["|", ";", ",", "\\t"])
    noun = r.choice(v.nouns)
    name = f"parse_{noun}_line"
    comment = ' or line.startswith("#")' if style % 2 else ""
    code = (f"_{noun.upper()}_FIELDS = {tuple(fields)!r}\n\n\n"
            f"def {name}(line):\n"
            f"    \"\"\"Split one '{sep}'-separated {noun} line into a dict; blank lines give None.\"\"\"\n"
            f"    line = line.strip()\n    if not line{comment}:\n"
            f"        return None\n"
            f"    parts = [p.strip() for p in line.split(\"{sep}\")]\n"
            f"    if len(parts) != len(_{noun.upper()}_FIELDS):\n"
            f"        raise ValueError(f\"expected {{len(_{noun.upper()}_FIELDS)}} fields, got {{len(parts)}}: {{line!r}}\")\n"
            f"    return dict(zip(_{noun.upper()}_FIELDS, parts))\n")
    return name, code, set()


def _t_format(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    label, num = r.choice(v.labels), r.choice(v.numbers)
    width = r.choice([12, 16, 18, 20, 24])
    prec = r.choice([2, 3, 4])
    name = f"format_{r.choice(v.nouns)}_row"
    code = (f"def {name}(record):\n"
            f"    \"\"\"A fixed-width report row: `{label}` left, `{num}` right with {prec} decimals.\"\"\"\n"
            f"    return f\"{{str(record.get('{label}', '')):<{width}}}{{float(record.get('{num}', 0)):>{width}.{prec}f}}\"\n")
    return name, code, set()


def _t_dedupe(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun, key = r.choice(v.nouns), r.choice(v.labels)
    name = f"unique_{_plural(noun)}"
    keep = "first" if style % 2 == 0 else "last"
    if keep == "first":
        body = (f"    seen = set()\n    out = []\n    for item in items:\n        k = item.get(\"{key}\")\n"
                f"        if k not in seen:\n            seen.add(k)\n            out.append(item)\n    return out\n")
    else:
        body = f"    latest = {{}}\n    for item in items:\n        latest[item.get(\"{key}\")] = item\n    return list(latest.values())\n"
    code = f"def {name}(items):\n    \"\"\"Drop {_plural(noun)} repeating a `{key}`, keeping the {keep} one.\"\"\"\n{body}"
    return name, code, set()


def _t_clamp(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    num = r.choice(v.numbers)
    lo = r.choice([0, 1, 2, 5])
    hi = lo + r.choice([9, 40, 95, 250, 990])
    name = f"clamp_{num}"
    if style % 2:
        body = "    return max(low, min(high, value))\n"
    else:
        body = "    if value < low:\n        return low\n    if value > high:\n        return high\n    return value\n"
    code = (f"def {name}(value, low={lo}, high={hi}):\n"
            f"    \"\"\"Keep a `{num}` inside [low, high].\"\"\"\n{body}")
    return name, code, set()


def _t_window(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    num = r.choice(v.numbers)
    window = r.choice([3, 4, 6, 12, 24])
    name = f"rolling_mean_{num}"
    code = (f"def {name}(values, window={window}):\n"
            f"    \"\"\"Trailing mean of `{num}` values over `window` points (shorter at the start).\"\"\"\n"
            f"    out = []\n    for i in range(len(values)):\n"
            f"        span = values[max(0, i - window + 1):i + 1]\n        out.append(sum(span) / len(span))\n"
            f"    return out\n")
    if style % 2:
        code = code.replace("        span = values[max(0, i - window + 1):i + 1]\n",
                            "        start = i - window + 1 if i >= window else 0\n        span = values[start:i + 1]\n")
    return name, code, set()


def _t_validate(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    req = r.sample(list(v.labels), k=min(2, len(v.labels)))
    num = r.choice(v.numbers)
    name = f"validate_{noun}"
    err = f"Invalid{_title(noun)}" if style % 2 else "ValueError"
    pre = f"class {err}(ValueError):\n    \"\"\"A {noun} record failed validation.\"\"\"\n\n\n" if style % 2 else ""
    code = (f"{pre}def {name}(record):\n"
            f"    \"\"\"Check a {noun} record has {', '.join(req)} and a non-negative `{num}`.\"\"\"\n"
            f"    for key in ({', '.join(repr(k) for k in req)},):\n"
            f"        if not record.get(key):\n            raise {err}(f\"{noun} is missing {{key}}: {{record!r}}\")\n"
            f"    if record.get(\"{num}\", 0) < 0:\n            raise {err}(f\"negative {num}: {{record['{num}']}}\")\n"
            f"    return record\n").replace("\n            raise " + err + "(f\"negative", "\n        raise " + err + "(f\"negative")
    return name, code, set()


def _t_latest(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun, key = r.choice(v.nouns), r.choice(v.labels)
    stamp = r.choice(["updated_at", "seen_at", "recorded_at", "changed_at"])
    name = f"latest_{noun}_per_{key}"
    code = (f"def {name}(records):\n"
            f"    \"\"\"For each `{key}`, the record with the greatest `{stamp}`.\"\"\"\n"
            f"    best = {{}}\n    for record in records:\n        k = record[\"{key}\"]\n"
            f"        if k not in best or record[\"{stamp}\"] {'>' if style % 2 else '>='} best[k][\"{stamp}\"]:\n"
            f"            best[k] = record\n    return best\n")
    return name, code, set()


def _t_percentile(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    num = r.choice(v.numbers)
    name = f"{num}_percentile"
    code = (f"def {name}(values, pct):\n"
            f"    \"\"\"Nearest-rank percentile of `{num}` values; `pct` in (0, 100].\"\"\"\n"
            f"    if not values:\n        raise ValueError(\"no values\")\n"
            f"    if not 0 < pct <= 100:\n        raise ValueError(f\"pct out of range: {{pct}}\")\n"
            f"    ordered = sorted(values)\n"
            f"    rank = math.ceil(pct / 100 * len(ordered))\n    return ordered[rank - 1]\n")
    return name, code, {"import math"}


def _t_index(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun, key = r.choice(v.nouns), r.choice(v.labels)
    name = f"index_{_plural(noun)}_by_{key}"
    strict = style % 2
    body = (f"    out = {{}}\n    for item in items:\n        k = item[\"{key}\"]\n"
            + (f"        if k in out:\n            raise ValueError(f\"duplicate {key}: {{k}}\")\n" if strict else "")
            + "        out[k] = item\n    return out\n")
    code = f"def {name}(items):\n    \"\"\"Map each `{key}` to its {noun}{' (duplicates are an error)' if strict else ''}.\"\"\"\n{body}"
    return name, code, set()


def _t_registry(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    name = f"{_title(noun)}{r.choice(['Registry', 'Catalog', 'Directory'])}"
    code = (f"class {name}:\n    \"\"\"Named {_plural(noun)}, registered once each.\"\"\"\n\n"
            f"    def __init__(self):\n        self._items = {{}}\n\n"
            f"    def register(self, key, item):\n        \"\"\"Add `item` under `key`; a key may be registered once.\"\"\"\n"
            f"        if key in self._items:\n            raise KeyError(f\"already registered: {{key}}\")\n"
            f"        self._items[key] = item\n\n"
            f"    def get(self, key, default=None):\n        \"\"\"The item under `key`, or `default`.\"\"\"\n"
            f"        return self._items.get(key, default)\n\n"
            f"    def names(self):\n        \"\"\"Registered keys, sorted.\"\"\"\n        return sorted(self._items)\n")
    if style % 2:
        code += "\n    def __len__(self):\n        return len(self._items)\n"
    return name, code, set()


def _t_defaults(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    area = r.choice(v.areas)
    keys = r.sample(list(v.labels) + list(v.numbers), k=min(3, len(v.labels) + len(v.numbers)))
    vals = [repr(r.choice(["auto", "default", "none", "all", True, False, r.randint(2, 48)])) for _ in keys]
    const = f"{area.upper()}_DEFAULTS"
    name = f"{area}_options"
    code = (f"{const} = {{{', '.join(f'{k!r}: {x}' for k, x in zip(keys, vals, strict=True))}}}\n\n\n"
            f"def {name}(overrides=None):\n"
            f"    \"\"\"The {area} options: defaults updated with `overrides`; unknown keys are rejected.\"\"\"\n"
            f"    overrides = overrides or {{}}\n"
            f"    unknown = sorted(set(overrides) - set({const}))\n"
            f"    if unknown:\n        raise KeyError(f\"unknown {area} options: {{unknown}}\")\n"
            f"    return {{**{const}, **overrides}}\n")
    return name, code, set()


def _t_states(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    states = r.sample(["pending", "open", "active", "held", "closed", "cancelled", "failed", "done", "archived",
                       "draft", "queued"], k=5)
    terminal = states[-2:]
    name = f"{noun}_is_final"
    code = (f"{noun.upper()}_STATES = ({', '.join(repr(s) for s in states)})\n"
            f"{noun.upper()}_FINAL = frozenset({{{', '.join(repr(s) for s in terminal)}}})\n\n\n"
            f"def {name}(state):\n    \"\"\"Whether a {noun} in `state` can no longer change.\"\"\"\n"
            f"    if state not in {noun.upper()}_STATES:\n        raise ValueError(f\"unknown {noun} state: {{state}}\")\n"
            f"    return state in {noun.upper()}_FINAL\n")
    return name, code, set()


def _t_diff(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    name = f"diff_{noun}_snapshots"
    ret = "added, removed, changed" if style % 2 else '{"added": added, "removed": removed, "changed": changed}'
    code = (f"def {name}(before, after):\n"
            f"    \"\"\"Keys added, removed and changed between two {noun} snapshots (dicts).\"\"\"\n"
            f"    added = sorted(set(after) - set(before))\n    removed = sorted(set(before) - set(after))\n"
            f"    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])\n"
            f"    return {ret}\n")
    return name, code, set()


def _t_page(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    noun = r.choice(v.nouns)
    size = r.choice([10, 20, 25, 50, 100])
    name = f"page_of_{_plural(noun)}"
    code = (f"def {name}(items, page, per_page={size}):\n"
            f"    \"\"\"The 1-based `page` of {_plural(noun)}, `per_page` at a time (empty past the end).\"\"\"\n"
            f"    if page < 1:\n        raise ValueError(f\"page starts at 1, got {{page}}\")\n"
            f"    start = (page - 1) * per_page\n    return items[start:start + per_page]\n")
    return name, code, set()


def _t_share(r: random.Random, v: FillerVocab, style: int) -> tuple[str, str, set[str]]:
    num, key = r.choice(v.numbers), r.choice(v.labels)
    name = f"{num}_share_by_{key}"
    digits = r.choice([2, 3, 4])
    code = (f"def {name}(records):\n"
            f"    \"\"\"Each `{key}`'s fraction of the total `{num}`, rounded to {digits} places.\"\"\"\n"
            f"    totals = Counter()\n    for record in records:\n"
            f"        totals[record.get(\"{key}\")] += record.get(\"{num}\", 0)\n"
            f"    grand = sum(totals.values())\n    if not grand:\n        return {{}}\n"
            f"    return {{k: round(x / grand, {digits}) for k, x in totals.items()}}\n")
    return name, code, {"from collections import Counter"}


_TEMPLATES = {
    "total": _t_total, "threshold": _t_threshold, "normalise": _t_normalise, "chunks": _t_chunks,
    "record": _t_record, "parse": _t_parse, "format": _t_format, "dedupe": _t_dedupe, "clamp": _t_clamp,
    "window": _t_window, "validate": _t_validate, "latest": _t_latest, "percentile": _t_percentile,
    "index": _t_index, "registry": _t_registry, "defaults": _t_defaults, "states": _t_states,
    "diff": _t_diff, "page": _t_page, "share": _t_share,
}


def _render_unit(unit: _Unit, vocab: FillerVocab) -> tuple[str, str, set[str]]:
    return _TEMPLATES[unit.template](random.Random(unit.seed), vocab, unit.style)


def _rendered(unit: _Unit, vocab: FillerVocab, memo: dict) -> tuple[str, str, set[str]]:
    """`_render_unit`, once per unit of a filler (`memo` holds the renders so far)."""
    got = memo.get(unit)
    if got is None:
        got = memo[unit] = _render_unit(unit, vocab)
    return got


def _draw_unit(r: random.Random, vocab: FillerVocab, taken: set[str], avoid: tuple[str, ...],
               near: tuple[_Unit, ...] = (), memo: dict | None = None) -> _Unit:
    """A new unit whose name is not taken and whose text holds no avoided token.

    Templates already used by `near` (the module's other units) are avoided while others remain.
    The accepted unit's render goes into `memo`, so the module rendering it next does not redo it.
    """
    fresh = sorted(set(_TEMPLATES) - {u.template for u in near}) or sorted(_TEMPLATES)
    for attempt in range(200):
        pool = fresh if attempt < 100 else sorted(_TEMPLATES)
        unit = _Unit(r.choice(pool), "", r.randrange(1 << 30), r.randrange(6))
        rendered = _render_unit(unit, vocab)
        name, code, _ = rendered
        if name not in taken and not _hits(code, avoid):
            drawn = _Unit(unit.template, name, unit.seed, unit.style)
            if memo is not None:
                memo[drawn] = rendered  # a unit's render does not depend on its name field
            return drawn
    raise ValueError("filler: cannot draw a unit free of the avoided tokens")


def _redraw(r: random.Random, unit: _Unit, vocab: FillerVocab, avoid: tuple[str, ...], keep_seed: bool,
            attempts: int = 200, memo: dict | None = None) -> _Unit:
    """The same definition (same name) with a new style or new constants, free of avoided tokens."""
    memo = {} if memo is None else memo
    before = _rendered(unit, vocab, memo)[1]
    for attempt in range(attempts):
        # A template may ignore its style; after a few tries a new seed changes the constants instead.
        restyle = keep_seed and attempt < 3
        seed = unit.seed if restyle else r.randrange(1 << 30)
        style = (unit.style + r.randrange(1, 6)) % 6 if restyle else unit.style
        cand = _Unit(unit.template, unit.name, seed, style)
        rendered = _render_unit(cand, vocab)
        name, code, _ = rendered
        if name == unit.name and code != before and not _hits(code, avoid):
            memo[cand] = rendered
            return cand
    return unit


def _hits(text: str, avoid: tuple[str, ...]) -> bool:
    return bool(avoid) and bool(find_tokens(text, avoid))


def _render_module(doc: str, units: list[_Unit], vocab: FillerVocab, memo: dict) -> str:
    parts, imports = [], set()
    for unit in units:
        _, code, imp = _rendered(unit, vocab, memo)
        parts.append(code.rstrip("\n"))
        imports |= imp
    plain = sorted(i for i in imports if i.startswith("import "))
    froms = sorted(i for i in imports if i.startswith("from "))
    head = [f'"""{doc}"""'] + (["\n".join(plain + froms)] if imports else [])
    return "\n\n".join(head) + "\n\n\n" + "\n\n\n".join(parts) + "\n"


_DOCS = (
    "{Area} helpers for {nouns}: {what}.",
    "{What} for {nouns} ({area}).",
    "Small, pure functions the {area} code uses on {nouns}.",
    "{Area}: {what}. Records are plain dicts unless noted.",
    "Utilities around {nouns} in the {area} path; no I/O here.",
)
_WHATS = ("grouping, checks and formatting", "parsing and validation", "lookups and summaries",
          "batching and paging", "aggregation and reports", "normalisation and snapshots")


def _module_doc(r: random.Random, vocab: FillerVocab, area: str) -> str:
    noun = r.choice(vocab.nouns)
    what = r.choice(_WHATS)
    return r.choice(_DOCS).format(Area=area.replace("_", " ").capitalize(), area=area.replace("_", " "),
                                  nouns=_plural(noun), what=what, What=what.capitalize())


def _message(r: random.Random, kind: str, mod: str, fn: str) -> str:
    short = mod.rsplit("/", 1)[-1].removesuffix(".py")
    area = mod.split("/")[-2] if mod.count("/") >= 2 else short
    prefix = r.choice([f"{area}/{short}", short, area])
    options = {
        "add": [f"add {fn}", f"add {fn} helper", f"{fn}: new helper for the {area} path", f"introduce {fn}"],
        "style": [f"simplify {fn}", f"refactor {fn}", f"tidy {fn}", f"make {fn} easier to read",
                  f"{fn}: restructure the loop"],
        "tune": [f"tune defaults in {fn}", f"adjust {fn} constants", f"{fn}: revisit default limits",
                 f"change default of {fn} after review"],
        "drop": [f"drop unused {fn}", f"remove {fn} (no callers left)", f"delete dead helper {fn}"],
        "doc": ["reword module docstring", "clarify module docstring", "describe what the module is for in its docstring"],
        "new": ["add module", "new module for the area", "split helpers into their own module"],
    }
    body = r.choice(options[kind])
    if r.random() < 0.25:
        body += "\n\n" + r.choice(["No behaviour change intended.", "Follow-up from code review.",
                                   "Small cleanup while reading this code.", "Keeps the helpers consistent.",
                                   "Part of the ongoing tidy-up of this package."])
    return f"{prefix}: {body}"


def make_filler(vocab: FillerVocab, key: str, modules: int, commits: int, avoid: tuple[str, ...] = (),
                include: tuple[str, ...] = (), redraw_attempts: int = 200) -> Filler:
    """`modules` filler modules under `vocab.package` and `commits` commits evolving them.

    Deterministic in (`vocab`, `key`, `modules`, `commits`, `avoid`); no module text or commit
    message contains any of the `avoid` tokens (validator semantics). `include` names subpackages that
    must exist (first in `Filler.packages`), so a family's rule module can live in a fitting one
    among filler modules. `redraw_attempts` bounds the tries at restyling a definition before a
    commit adds one instead (long histories lower it: most failed tries re-render in vain). About a fifth of the modules
    first appear in a commit; the rest are in the initial import. The import smoke test
    (`FILLER_TEST`) imports every module of the package, so the filler's own suite is one test.
    """
    if modules < 1 or commits < 0:
        raise ValueError(f"filler needs at least one module and no negative commit count, got {modules}, {commits}")
    r = random.Random(salted_key(f"filler:{key}:{modules}:{commits}"))
    pkg = vocab.package
    n_sub = max(1, min(len(vocab.areas), round(modules / 6)))
    areas = [a for a in vocab.areas if not _hits(a, avoid) and a not in include]
    n_sub = max(len(include), min(n_sub, len(areas) + len(include)))
    if not n_sub:
        raise ValueError("filler: every area name holds an avoided token")
    subs = list(include) + r.sample(areas, k=n_sub - len(include))
    paths: list[str] = []
    names = [f"{n}_{k}" for n in vocab.nouns for k in _MODULE_KINDS] + [f"{k}" for k in _MODULE_KINDS]
    r.shuffle(names)
    used: set[str] = set()
    for name in names:
        if len(paths) == modules:
            break
        sub = subs[len(paths) % n_sub]
        path = f"{pkg}/{sub}/{name}.py"
        if path not in used and not _hits(name, avoid):
            used.add(path)
            paths.append(path)
    if len(paths) < modules:
        raise ValueError(f"filler: vocabulary too small for {modules} modules")
    state: dict[str, tuple[str, list[_Unit]]] = {}
    memo: dict[_Unit, tuple[str, str, set[str]]] = {}

    def new_module(path: str) -> None:
        area = path.split("/")[-2]
        doc = next((d for d in (_module_doc(r, vocab, area) for _ in range(50)) if not _hits(d, avoid)), "Helpers.")
        taken: set[str] = set()
        units = []
        for _ in range(r.randint(2, 5)):
            unit = _draw_unit(r, vocab, taken, avoid, tuple(units), memo)
            taken.add(unit.name)
            units.append(unit)
        state[path] = (doc, units)

    late = set(r.sample(paths, k=modules // 5)) if commits >= modules // 5 else set()
    for path in paths:
        if path not in late:
            new_module(path)
    files = {f"{pkg}/{sub}/__init__.py": f'"""{sub.replace("_", " ").capitalize()} code of {pkg}."""\n' for sub in subs}
    # The current text of every module, rendered once per change (long histories would otherwise
    # render each touched module three times per commit).
    texts = {p: _render_module(*state[p], vocab, memo) for p in state}
    files.update(texts)
    files[FILLER_TEST] = (
        '"""Every module of the package imports cleanly."""\n\nimport importlib\nimport pkgutil\n\n'
        f"import {pkg}\n\n\ndef test_every_module_imports():\n"
        f"    names = [m.name for m in pkgutil.walk_packages({pkg}.__path__, \"{pkg}.\")]\n"
        "    assert names\n    for name in names:\n        importlib.import_module(name)\n"
    )
    out: list[Commit] = []
    pending = sorted(late)
    r.shuffle(pending)
    present = sorted(state)
    # Spread the late modules over the history: one appears every `gap` commits.
    gap = max(1, commits // (len(pending) + 1)) if pending else 0
    for i in range(commits):
        if pending and i % gap == gap - 1:
            path = pending.pop()
            new_module(path)
            bisect.insort(present, path)
            msg = _message(r, "new", path, "")
            texts[path] = _render_module(*state[path], vocab, memo)
            out.append(Commit(msg if not _hits(msg, avoid) else "add module", {path: texts[path]}))
            continue
        path = r.choice(present)
        doc, units = state[path]
        roll = r.random()
        if roll < 0.3:
            unit = _draw_unit(r, vocab, {u.name for u in units}, avoid, tuple(units), memo)
            units = [*units, unit]
            kind, fn = "add", unit.name
        elif roll < 0.42 and len(units) > 2:
            idx = r.randrange(len(units))
            kind, fn = "drop", units[idx].name
            units = units[:idx] + units[idx + 1:]
        elif roll < 0.47:
            new_doc = _module_doc(r, vocab, path.split("/")[-2])
            if new_doc == doc or _hits(new_doc, avoid):
                new_doc = doc.rstrip(".") + "; see the tests for examples."
            doc, kind, fn = new_doc, "doc", ""
        else:
            idx = r.randrange(len(units))
            keep_seed = roll < 0.75
            changed = _redraw(r, units[idx], vocab, avoid, keep_seed=keep_seed, attempts=redraw_attempts,
                              memo=memo)
            units = units[:idx] + [changed] + units[idx + 1:]
            kind, fn = ("style" if keep_seed else "tune"), changed.name
        text = _render_module(doc, units, vocab, memo)
        if text == texts[path]:
            # The redraw changed nothing visible: make the commit add a definition instead.
            unit = _draw_unit(r, vocab, {u.name for u in units}, avoid, tuple(units), memo)
            units = [*units, unit]
            kind, fn = "add", unit.name
            text = _render_module(doc, units, vocab, memo)
        state[path] = (doc, units)
        texts[path] = text
        msg = next((m for m in (_message(r, kind, path, fn) for _ in range(20)) if not _hits(m, avoid)), f"{kind} {fn}")
        out.append(Commit(msg, {path: text}))
    return Filler(files=files, commits=tuple(out), modules=tuple(sorted(state)),
                  packages=tuple(f"{pkg}/{sub}" for sub in subs))
