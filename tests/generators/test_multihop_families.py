"""The multi-hop families: hop structure, split facts, and the rule checks that need no test run."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

import pytest

from sdebench.generation import validate
from sdebench.generation.generate import load_generator
from sdebench.generation.spec import TaskSpec
from sdebench.tasks.artifacts import SOURCES, artifact_kind
from sdebench.tasks.tokens import find_tokens

GENERATORS = Path(__file__).resolve().parents[2] / "generators"
MULTIHOP = ("minicalc_rangemf", "minicalc_erragg", "layered_config", "promo_stacking", "retail_week",
            "search_prefix")
SPLIT = ("minicalc_rangemf", "minicalc_erragg", "promo_stacking")


def generator(name: str):
    """The GENERATOR of generators/<name>.py."""
    return load_generator(GENERATORS / f"{name}.py")


def token_parts(name: str, variant: int):
    """The fact tokens of each part of a split fact, in the order the parts are placed."""
    gen = generator(name)
    module = sys.modules[f"sdebench_family_{name}"]
    return module.token_parts(module.shape(variant, gen.fact(variant)))


def imported(text: str) -> set[str]:
    """Module names a source text imports; `from pkg import mod` also gives `pkg.mod`."""
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def module_name(path: str) -> str:
    """The dotted module name of a repo path."""
    return path[:-3].replace("/", ".")


def added_paragraphs(spec: TaskSpec, bare: TaskSpec) -> list[str]:
    """Artifact paragraphs present at HEAD of `spec` but not of the fact-free placement `bare`."""
    head, none = validate.head_tree(spec), validate.head_tree(bare)
    out = []
    for path, text in head.items():
        extra = Counter(text.split("\n\n")) - Counter(none.get(path, "").split("\n\n"))
        out += list(extra.elements())
    return out


def parts_in(text: str, parts) -> list[int]:
    """Indexes of the fact parts whose tokens occur in `text`."""
    return [i for i, tokens in enumerate(parts) if find_tokens(text, tokens)]


@pytest.mark.parametrize("name", MULTIHOP)
def test_static_rules_hold_in_every_placement(name):
    gen = generator(name)
    assert gen.bottleneck == "multi-hop"
    assert len(gen.variants) >= 2
    facts = set()
    for variant in gen.variants:
        paths = set()
        for source in SOURCES:
            spec = gen.build(variant, source)
            problems = (validate.check_structure(spec, gen.family, variant, source)
                        + validate.check_placement(spec) + validate.check_no_future_leak(spec))
            assert [str(p) for p in problems] == []
            facts.add(spec.fact)
            artifacts = {p: c for p, c in validate.head_tree(spec).items() if artifact_kind(p)}
            paths.add(frozenset(artifacts))
            assert any("Status: Superseded" in c for c in artifacts.values()), "no near-miss entry"
        assert len(paths) == 1, "artifact paths differ between placements"
    assert len(facts) == len(gen.variants), "variants must differ in the fact"


@pytest.mark.parametrize("name", MULTIHOP)
def test_repro_reaches_the_rule_module_only_through_other_modules(name):
    spec = generator(name).build(0, "none")
    head = validate.head_tree(spec)
    [rule_path] = spec.oracle_files
    rule = module_name(rule_path)
    package = rule.split(".")[0]
    entry_points = set()
    for path in spec.fail_to_pass:
        entry_points |= {m for m in imported(head[path.split("::")[0]]) if m.startswith(package + ".")
                         and m.replace(".", "/") + ".py" in head}
    assert entry_points and rule not in entry_points, "the repro must not call the rule's module directly"
    for entry in entry_points:
        direct = imported(head[entry.replace(".", "/") + ".py"])
        assert rule not in direct, f"{entry} imports {rule} directly: no intermediate hop"
        modules = {module_name(p) for p in head if p.endswith(".py")}
        seen, todo = set(), [d for d in direct if d in modules]
        while todo:
            mod = todo.pop()
            if mod not in seen:
                seen.add(mod)
                todo += [m for m in imported(head[mod.replace(".", "/") + ".py"]) if m in modules]
        assert rule in seen, f"{rule} is not reached from {entry} through intermediate modules"


@pytest.mark.parametrize("name", SPLIT)
def test_split_fact_parts_live_in_separate_entries(name):
    gen = generator(name)
    for variant in gen.variants:
        parts = token_parts(name, variant)
        bare = gen.build(variant, "none")
        for source in ("K", "F", "X"):
            added = added_paragraphs(gen.build(variant, source), bare)
            found = [parts_in(p, parts) for p in added]
            assert all(len(f) <= 1 for f in found), f"{source}: an entry holds both parts"
            assert sorted(i for f in found for i in f) == [0, 1], f"{source}: each part in exactly one entry"
        history = gen.build(variant, "H")
        found = [parts_in(c.message, parts) for c in history.commits]
        assert all(len(f) <= 1 for f in found), "H: a commit message holds both parts"
        assert sorted(i for f in found for i in f) == [0, 1], "H: each part in exactly one commit message"
