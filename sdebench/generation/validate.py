"""The generation rules of docs/design.md as checks on a built task.

Every check returns `Violation`s naming the rule; an empty list means the task may be written.
Test-running checks (rules 2-5) take four real pytest runs: the oracle fix with every test as
written, and HEAD, the oracle fix and the conventional fix with the observation tests (the
grading's held-out phase), judged against the oracle's observations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sdebench.generation.spec import TaskSpec
from sdebench.grading.rules import is_protected, observed_verdict
from sdebench.grading.testrun import TestRun
from sdebench.tasks.artifacts import COMPETENCIES, RECALL, SOURCES, artifact_kind
from sdebench.tasks.tokens import find_tokens

RULES = {
    1: "decisive on exactly one source",
    2: "non-guessable",
    3: "oracle fix passes",
    4: "HEAD state (PASS_TO_PASS green, FAIL_TO_PASS red)",
    5: "no future leak",
    6: "deterministic",
    7: "not searchable",
    8: "naive memory readers fail (hard tier)",
    "shape": "same shape in every placement",
}
SHAPE = "shape"  # checked across the placements of a variant (check_shape), not on one task


@dataclass(frozen=True)
class Violation:
    """One broken rule, with what broke it."""

    rule: int | str
    detail: str

    def __str__(self) -> str:
        return f"rule {self.rule} ({RULES.get(self.rule, 'structure')}): {self.detail}"


# --- rule 1 and 5: where the fact lives ------------------------------------------------------


def head_tree(spec: TaskSpec) -> dict[str, str]:
    """The files at HEAD after applying every commit in order."""
    tree: dict[str, str] = {}
    for commit in spec.commits:
        for path, content in commit.files.items():
            if content is None:
                tree.pop(path, None)
            else:
                tree[path] = content
    return tree


def fact_locations(spec: TaskSpec) -> dict[str, set[str]]:
    """Source label -> places where a fact token occurs.

    HEAD artifact files count as their kind (K/F/X); commit messages, every version of a code or
    test file, and versions of artifacts that differ from HEAD count as history (H); HEAD code
    counts as 'code' (never allowed); the statement counts as 'statement' (never allowed).
    """
    tokens = spec.fact_tokens
    head = head_tree(spec)
    where: dict[str, set[str]] = {}

    def hit(label: str, place: str, text: str) -> None:
        if find_tokens(text, tokens):
            where.setdefault(label, set()).add(place)

    for path, content in head.items():
        hit(artifact_kind(path) or "code", path, content)
    seen: set[tuple[str, str]] = set()
    for i, commit in enumerate(spec.commits):
        hit("H", f"commit {i} message", commit.message)
        for path, content in commit.files.items():
            if content is None or (path, content) in seen or head.get(path) == content:
                continue
            seen.add((path, content))
            hit("H", f"commit {i} {path}", content)
    hit("statement", "statement", spec.statement)
    return where


def check_placement(spec: TaskSpec) -> list[Violation]:
    """Rule 1: fact tokens in the designated source and nowhere else (none: nowhere)."""
    out = []
    where = fact_locations(spec)
    allowed = set() if spec.source == "none" else {spec.source}
    for label, places in sorted(where.items()):
        if label not in allowed:
            shown = ", ".join(sorted(places)[:3])
            out.append(Violation(1, f"fact token found in {label} ({shown}) but the fact's source is {spec.source}"))
    if spec.source != "none" and spec.source not in where:
        out.append(Violation(1, f"no fact token found in the designated source {spec.source}"))
    return out


def check_no_future_leak(spec: TaskSpec) -> list[Violation]:
    """Rule 5 (content part): the fix and the hidden tests appear in no version of any repo file."""
    out = []
    head = head_tree(spec)
    versions: dict[str, set[str]] = {}
    for commit in spec.commits:
        for path, content in commit.files.items():
            if content is not None:
                versions.setdefault(path, set()).add(content)
    for path, content in spec.oracle_files.items():
        if content in versions.get(path, set()):
            out.append(Violation(5, f"the oracle version of {path} is reachable in history"))
        if head.get(path) == content:
            out.append(Violation(5, f"the oracle version of {path} is already HEAD (nothing to fix)"))
    for path, content in spec.hidden_tests.items():
        if path in versions:
            out.append(Violation(5, f"hidden test file {path} exists in the repo history"))
        names = set(re.findall(r"def (test_\w+)", content))
        for rpath, contents in versions.items():
            for text in contents:
                leaked = [n for n in names if n in text and re.search(rf"\b{n}\b", text)]
                if leaked:
                    out.append(Violation(5, f"hidden test {leaked[0]} is named in {rpath}"))
                    break
    squashed = {p: c for p, c in head.items() if artifact_kind(p) is None}
    for path, content in squashed.items():
        if find_tokens(content, spec.fact_tokens):
            out.append(Violation(5, f"squashed workspace file {path} holds a fact token"))
    return out


def check_structure(spec: TaskSpec, family: str, variant: int, source: str) -> list[Violation]:
    """The spec is what was asked for and is internally consistent."""
    out = []
    problems = []
    if spec.family != family or spec.variant != variant or spec.source != source:
        problems.append(f"built {spec.family}/{spec.variant}/{spec.source} when asked for {family}/{variant}/{source}")
    if spec.source not in SOURCES:
        problems.append(f"unknown source {spec.source!r}")
    if spec.competency not in COMPETENCIES:
        problems.append(f"unknown competency {spec.competency!r} (choose {', '.join(COMPETENCIES)})")
    if not spec.fact_tokens:
        problems.append("no fact tokens declared")
    if not spec.fail_to_pass or not spec.hidden_to_pass:
        problems.append("FAIL_TO_PASS and HIDDEN_TO_PASS must not be empty")
    if not spec.commits:
        problems.append("no commits")
    head = head_tree(spec)
    for path in list(spec.oracle_files) + list(spec.conventional_files):
        if is_protected(path):
            problems.append(f"a fix may not touch test file {path}")
        if artifact_kind(path) is not None:
            problems.append(f"a fix may not touch memory artifact {path}")
    for path in spec.hidden_tests:
        if path in head:
            problems.append(f"hidden test path {path} is also a repo file")
    for path in [p for c in spec.commits for p in c.files] + list(spec.hidden_tests):
        if path.startswith("/") or ".." in path.split("/"):
            problems.append(f"path {path!r} is not repo-relative")
    for test_id in spec.fail_to_pass + spec.pass_to_pass:
        if test_id.split("::", 1)[0] not in head:
            problems.append(f"visible test {test_id} is not in a HEAD file")
    for test_id in spec.hidden_to_pass:
        if test_id.split("::", 1)[0] not in spec.hidden_tests:
            problems.append(f"hidden test {test_id} is not in a hidden file")
    out += [Violation(0, p) for p in problems]
    return out


# --- rules 2-4: outcomes of real runs ---------------------------------------------------------


def _brief(ids: list[str]) -> str:
    return ", ".join(ids[:3]) + (f" (+{len(ids) - 3} more)" if len(ids) > 3 else "")


RUN_RULES = {"oracle": 3, "head": 4, "conventional": 2}


def check_runs(spec: TaskSpec, runs: Mapping[str, TestRun], hidden_sources: Mapping[str, str]
               ) -> tuple[list[Violation], dict[str, list]]:
    """Rules 2-5 from three real runs, and the expected observations (the oracle's).

    `oracle`, `head`, `conventional`: each tree with the observation tests (the grading phase 2);
    the oracle's run also holds the authored held-out tests as written (`written_path`), whose
    expectations must hold. Every verdict on observations is judged the way grading judges it,
    against the oracle's (a visible test's re-check must hold on the oracle, so the visible tests
    as written are covered too). `hidden_sources` are the hidden observation tests (checked for
    answers left in them).
    """
    from sdebench.generation.observe import answers_in_source, expected_from, source_texts, written_path

    out = []
    for name, run in runs.items():
        if run.problem:
            out.append(Violation(RUN_RULES[name], f"{name} run: {run.problem}"))
        if run.tampered:
            out.append(Violation(RUN_RULES[name], f"{name} run reports tampering: {run.tampered[:2]}"))
    oracle = runs["oracle"]
    as_written = {i: written_path(i.split("::", 1)[0]) + "::" + i.split("::", 1)[1] for i in spec.hidden_to_pass}
    if bad := [i for i, w in as_written.items() if not oracle.outcome(w).passed]:
        out.append(Violation(3, f"oracle fix fails HIDDEN_TO_PASS as written: {_brief(bad)}"))
    all_ids = [*spec.fail_to_pass, *spec.pass_to_pass, *spec.hidden_to_pass]
    expected, problems = expected_from(runs["oracle"], all_ids)
    out += [Violation(3, f"oracle observations: {p}") for p in problems[:3]]
    if runs["oracle"].problem:
        return out, expected  # no usable answer key to judge the other runs against

    def failing(run: TestRun, ids) -> list[str]:
        reported = {k: (r.outcome, list(r.observed) if r.observed is not None else None) for k, r in run.tests.items()}
        return [i for i in ids if not observed_verdict(expected, reported, i)]

    head, conv = runs["head"], runs["conventional"]
    visible = set(spec.fail_to_pass) | set(spec.pass_to_pass)
    reported = {i for i in head.base_ids() if i.split("::", 1)[0] not in spec.hidden_tests}
    if reported != visible:
        extra, missing = sorted(reported - visible), sorted(visible - reported)
        out.append(Violation(4, f"visible tests at HEAD differ from the declared ids: unlisted {extra[:3]}, absent {missing[:3]}"))
    if bad := failing(head, spec.pass_to_pass):
        out.append(Violation(4, f"PASS_TO_PASS red at HEAD: {_brief(bad)}"))
    if bad := sorted(set(spec.fail_to_pass) - set(failing(head, spec.fail_to_pass))):
        out.append(Violation(4, f"FAIL_TO_PASS green at HEAD: {_brief(bad)}"))
    if bad := failing(conv, spec.fail_to_pass):
        out.append(Violation(2, f"conventional fix fails the repro (FAIL_TO_PASS): {_brief(bad)}"))
    if not failing(conv, spec.hidden_to_pass):
        out.append(Violation(2, "conventional fix passes every HIDDEN_TO_PASS test: the fact is guessable"))
    for path, src in sorted(hidden_sources.items()):
        if hits := find_tokens(src, spec.fact_tokens):
            out.append(Violation(5, f"hidden observation test {path} holds fact token {hits[0]!r}"))
    texts = {path: source_texts(src) for path, src in hidden_sources.items()}
    conv_obs = {k: list(r.observed or ()) for k, r in conv.tests.items()}
    for key, obs in sorted(expected.items()):
        path = key.split("::", 1)[0]
        if path not in texts:
            continue
        decisive = [o for i, o in enumerate(obs) if i >= len(conv_obs.get(key, [])) or conv_obs[key][i] != o]
        if leaked := answers_in_source(decisive, texts[path]):
            out.append(Violation(5, f"hidden test {key} spells out its expected value {leaked[0]!r} in its source"))
    return out, expected


def check_readers(competency: str, judged: Iterable) -> list[Violation]:
    """Rule 8 on a hard-tier task (any competency but recall): no naive reader's pick resolves from
    the memory of the full, memtool or inject delivery, and each resolves from the fact sentence
    (oracle delivery). `judged`: `sdebench.generation.readers.Judged` of every reader and view."""
    if competency == RECALL:
        return []
    out = []
    for j in judged:
        if j.view != "oracle" and j.resolves:
            out.append(Violation(8, f"{j.reader} resolves from the memory the {j.view} delivery shows "
                                    f"(it picks {j.pick})"))
        elif j.view == "oracle" and not j.resolves:
            out.append(Violation(8, f"{j.reader} does not resolve from the fact sentence (oracle delivery; it "
                                    f"picks {j.pick or 'nothing'}): the fact sentence must spell the fact"))
    return out


def check_determinism(first: TaskSpec, second: TaskSpec) -> list[Violation]:
    """Rule 6: two builds of the same variant and source are identical."""
    if first == second:
        return []
    fields = [f for f in first.__dataclass_fields__ if getattr(first, f) != getattr(second, f)]
    return [Violation(6, f"two builds differ in {', '.join(fields)}")]


def check_repo(refs: list[str], objects: set[str], fix_blobs: Mapping[str, str]) -> list[Violation]:
    """Rule 5 (repo part): only the main branch, and no object of the fixed files in the repo."""
    out = []
    extra = [r for r in refs if r != "refs/heads/main"]
    if extra:
        out.append(Violation(5, f"refs other than main: {', '.join(extra)}"))
    for path, sha in fix_blobs.items():
        if sha in objects:
            out.append(Violation(5, f"the fixed blob of {path} is stored in the repo"))
    return out


# --- the same shape in every placement ---------------------------------------------------------
#
# References between artifacts, looked for in every memory artifact at HEAD and every commit
# message: `ADR-<n>` names the ADR file `.../adr/<n>-*.md` (leading zeros ignored), and a path
# ending in `.md` (`docs/adr/0006-x.md`, `CONVENTIONS.md`, `.agent/preferences.md`) names the file at
# that path or, for a bare name, a file of that name. Code paths (`refunds.py`) are not references:
# past fixes name files of sibling services.

_ADR_REF = re.compile(r"\bADR-(\d+)\b")
_MD_REF = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
_ADR_FILE = re.compile(r"(?:^|/)adr/0*(\d+)-[^/]*\.md$")


def dangling_references(spec: TaskSpec) -> list[tuple[str, str]]:
    """(where, reference) for every reference between artifacts that names no file at HEAD."""
    head = head_tree(spec)
    adrs = {int(m.group(1)) for p in head if (m := _ADR_FILE.search(p))}
    # Every path and every tail of one (`adr/0006-x.md`, `0006-x.md`): what a mention may name.
    named = {p.split("/", i)[-1] for p in head for i in range(p.count("/") + 1)}
    texts = [(p, t) for p, t in sorted(head.items()) if artifact_kind(p) is not None]
    texts += [(f"commit {i} message", c.message) for i, c in enumerate(spec.commits)]
    out = []
    for where, text in texts:
        refs = [(f"ADR-{m.group(1)}", int(m.group(1)) in adrs) for m in _ADR_REF.finditer(text)]
        refs += [(m.group(1), m.group(1) in named) for m in _MD_REF.finditer(text)]
        out += [(where, ref) for ref, found in dict(refs).items() if not found]
    return out


def _odd_paths(sets: Mapping[str, set[str]]) -> str:
    """The paths some placements lack, as 'p only in K, q missing in H' ('' when all agree)."""
    every = set().union(*sets.values())
    odd = sorted(p for p in every if not all(p in v for v in sets.values()))
    said = []
    for p in odd[:3]:
        have = [s for s, v in sets.items() if p in v]
        lack = [s for s in sets if s not in have]
        said.append(f"{p} only in {'/'.join(have)}" if len(have) <= len(lack)
                    else f"{p} missing in {'/'.join(lack)}")
    return ", ".join(said) + (f" (+{len(odd) - 3} more)" if len(odd) > 3 else "")


def check_shape(specs: Mapping[str, TaskSpec]) -> list[Violation]:
    """The placements of one variant (source -> spec) have the same shape: the same number of
    commits, the same paths touched by each commit and so the same tree after each, and references
    between artifacts that resolve in every placement (see `dangling_references`). A file or a
    commit only one placement has tells the agent where the fact is."""
    first = next(iter(specs.values()))
    name = f"{first.family} v{first.variant}"
    out = []
    counts = {s: len(spec.commits) for s, spec in specs.items()}
    if len(set(counts.values())) > 1:
        out.append(Violation(SHAPE, f"{name}: the number of commits differs: "
                                    + ", ".join(f"{s} {n}" for s, n in counts.items())))
    else:
        trees: dict[str, set[str]] = {s: set() for s in specs}
        for i in range(len(first.commits)):
            touched = {}
            for s, spec in specs.items():
                files = spec.commits[i].files
                trees[s] = (trees[s] | {p for p, c in files.items() if c is not None}) - {
                    p for p, c in files.items() if c is None}
                touched[s] = {p if c is not None else f"{p} (deleted)" for p, c in files.items()}
            if odd := _odd_paths(trees):
                out.append(Violation(SHAPE, f"{name}: the tree after commit {i} differs: {odd}"))
                break
            if odd := _odd_paths(touched):
                out.append(Violation(SHAPE, f"{name}: commit {i} touches other paths: {odd}"))
                break
    dangling: dict[tuple[str, str], list[str]] = {}
    for s, spec in specs.items():
        for where, ref in dangling_references(spec):
            dangling.setdefault((where, ref), []).append(s)
    for (where, ref), sources in dangling.items():
        out.append(Violation(SHAPE, f"{name}: {ref} in {where} names no file (in {'/'.join(sources)})"))
    return out
