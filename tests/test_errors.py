"""Every exception of the package derives from SdebenchError (through its stage's class), and no two
classes of the package share a name."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections import defaultdict

from sdebench import errors
from tests.test_layers import PACKAGE, graph, module_names

# Run outside the package (in a sandbox, or shipped beside an exported task): they import nothing of
# sdebench, so their private exceptions cannot derive from it (sdebench/errors.py says so too).
STANDALONE = {"sdebench.grading._runner", "sdebench.grading.records", "sdebench.interop.harbor_verify"}
# What ships with them (sdebench.interop.harbor), and so is all they may import.
SHIPPED = STANDALONE | {"sdebench.grading.rules", "sdebench.tasks.artifacts"}
# Names still defined twice, in modules far apart; a new duplicate fails.
KNOWN_DUPLICATES = {"Entry", "Report", "Step", "Toolbox"}


def _classes(module) -> list[type]:
    return [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]


def test_every_exception_derives_from_sdebench_error():
    plain, unimportable = [], []
    for name, path in module_names(PACKAGE).items():
        if name in STANDALONE or name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:  # an optional dependency (inspect-ai has its own venv)
            assert not (e.name or "").startswith("sdebench"), e
            unimportable.append(path)
            continue
        plain += [f"{name}.{c.__name__}" for c in _classes(module)
                  if issubclass(c, BaseException) and not issubclass(c, errors.SdebenchError)]
    assert not plain, f"exceptions outside SdebenchError: {plain}"
    for path in unimportable:  # read, not imported: no class there names an exception base
        bases = [ast.unparse(b) for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)
                 for b in n.bases]
        assert not [b for b in bases if b.endswith(("Error", "Exception"))], path


def test_each_stage_class_is_the_one_its_stage_raises():
    from sdebench.agents import model
    from sdebench.components import ComponentError
    from sdebench.runs import config, jobs
    from sdebench.sandbox import base
    from sdebench.tasks import record

    assert model.ConfigError is config.ConfigError is errors.ConfigError
    assert record.TaskError is errors.TaskError and base.SandboxError is errors.SandboxError
    assert jobs.RunError is errors.RunError
    # the builtin bases callers catch are kept
    assert issubclass(ComponentError, ValueError) and issubclass(errors.SandboxError, RuntimeError)


def test_standalone_modules_import_only_what_ships_with_them():
    edges = graph()
    assert {m: edges[m] - SHIPPED for m in STANDALONE if edges[m] - SHIPPED} == {}


def test_class_names_are_unique():
    where = defaultdict(list)
    for name, path in module_names(PACKAGE).items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(name)
    twice = {n: m for n, m in where.items() if len(m) > 1 and n not in KNOWN_DUPLICATES}
    assert not twice, f"class names defined more than once: {twice}"
