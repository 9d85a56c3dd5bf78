"""The package's layers point one way and no two modules import each other, directly or round a circle.

Every import of every module counts, function-level ones included (a lazy import is still a
dependency); imports under `if TYPE_CHECKING:` do not (they never run). The map below is the one in
docs/design.md ("What each package does").
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sdebench"

# Each layer and the layers it may import, besides itself and the base (the root package: version
# and config dir; `errors`: the exception base classes). The run path (tasks, delivery, grading,
# runs) never imports the generator toolkit; agents never import runs; runs never import analysis.
MAY_IMPORT: dict[str, set[str]] = {
    "tasks": set(),
    "sandbox": {"components"},  # make_factory builds a backend through the registry
    "components": {"tasks", "sandbox"},  # the registry: names to `module:Name`, imported when used
    "delivery": {"tasks"},
    "grading": {"tasks", "sandbox", "components"},
    "generation": {"tasks", "sandbox", "components", "delivery", "grading", "agents"},
    "agents": {"tasks", "sandbox", "components", "delivery", "grading", "gateway", "generation"},
    "gateway": {"tasks", "sandbox", "components", "delivery", "grading", "agents"},
    "runs": {"tasks", "sandbox", "components", "delivery", "grading", "agents", "gateway"},
    "analysis": {"tasks", "sandbox", "components", "delivery", "grading", "agents", "gateway", "runs"},
}
BASE = {"", "errors"}
# The applications on top may import any layer: the entry points (`cli`, `sdebench/<name>.py`), the
# environment server, the format converters, the Inspect adapter, the memory systems (reached by name
# through the registry) and the test doubles.
TOP = {"env", "interop", "inspect", "memory", "testing"}


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package under `root`, by dotted name."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports anywhere in its body (not under TYPE_CHECKING)."""
    top = name.split(".")[0]
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()

    def target(mod: str, attr: str | None) -> None:
        if attr and f"{mod}.{attr}" in modules:
            found.add(f"{mod}.{attr}")
        elif mod in modules:
            found.add(mod)

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:  # only the `else:` branch runs
                visit(child)
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == top:
                    target(a.name, None)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            if mod.split(".")[0] == top:
                for a in node.names:
                    target(mod, a.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_names(root)
    return {n: imports(n, p, modules) for n, p in modules.items()}


def layer(module: str) -> str:
    """The layer of a module: the first name under the package ('' for the root package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def against_direction(edges: dict[str, set[str]]) -> list[str]:
    """Each import from a layer into one it may not import, as 'a -> b'."""
    bad = []
    for src, targets in sorted(edges.items()):
        lay = layer(src)
        if lay in TOP or lay not in MAY_IMPORT and lay not in BASE:
            continue  # an application or an entry point: it may import anything
        allowed = BASE | {lay} | MAY_IMPORT.get(lay, set())
        bad += [f"{src} -> {t}" for t in sorted(targets) if layer(t) not in allowed]
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def test_every_layer_is_mapped():
    layers = defaultdict(list)
    for m in module_names(PACKAGE):
        layers[layer(m)].append(m)
    unmapped = [lay for lay, mods in layers.items()
                if lay not in MAY_IMPORT and lay not in TOP and lay not in BASE
                and any(m.count(".") > 1 or (PACKAGE / lay).is_dir() for m in mods)]
    assert not unmapped, f"packages with no place in the layer map: {unmapped}"


def test_imports_follow_the_layers():
    bad = against_direction(graph())
    assert not bad, "imports against the layer direction:\n" + "\n".join(bad)


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "modules importing each other round a circle:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_catch_a_leak_and_a_circle():
    edges = {"sdebench.tasks.repo": {"sdebench.generation.spec"}, "sdebench.generation.spec": set(),
             "sdebench.runs.plan": {"sdebench.runs.run"}, "sdebench.runs.run": {"sdebench.runs.plan"},
             "sdebench.cli": {"sdebench.runs.run", "sdebench.generation.spec"}}
    assert against_direction(edges) == ["sdebench.tasks.repo -> sdebench.generation.spec"]
    assert cycles(edges) == [["sdebench.runs.plan", "sdebench.runs.run"]]


def test_function_level_imports_count(tmp_path):
    pkg = tmp_path / "sdebench"
    (pkg / "tasks").mkdir(parents=True)
    (pkg / "runs").mkdir()
    for f in ("__init__.py", "tasks/__init__.py", "runs/__init__.py", "runs/run.py"):
        (pkg / f).write_text("")
    (pkg / "tasks/record.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sdebench.runs import run\n"
        "def f():\n    from sdebench.runs.run import x\n")
    assert graph(pkg)["sdebench.tasks.record"] == {"sdebench.runs.run"}


def test_code_shipped_into_the_sandbox_imports_nothing_of_the_package():
    """Source the host sends into a sandbox as text runs where `sdebench` is not importable."""
    import ast as _ast

    from sdebench.generation import probe
    from sdebench.grading.testrun import runner_source
    from sdebench.interop import bugsinpy_observe

    for name, src in [("probe.DRIVER", probe.DRIVER), ("bugsinpy_observe.PREAMBLE", bugsinpy_observe.PREAMBLE),
                      ("runner", runner_source())]:
        tree = _ast.parse(src)
        mods = [n.module or "" for n in _ast.walk(tree) if isinstance(n, _ast.ImportFrom)]
        mods += [a.name for n in _ast.walk(tree) if isinstance(n, _ast.Import) for a in n.names]
        assert not [m for m in mods if m.split(".")[0] == "sdebench"], name
