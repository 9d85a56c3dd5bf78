"""Checked bytecode for validation trees: Python uses it, and never for a source it was not made from."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from sdebench.generation import bytecode

SOURCE = "VALUE = 'from the source'\n"


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())


def _value(root: Path) -> str:
    out = subprocess.run([sys.executable, "-I", "-B", "-c", "import sys; sys.path.append('.'); import pkg.mod as m; "
                          "print(m.VALUE + '|' + m.__file__)"], cwd=root, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_modules_get_the_file_python_would_write_and_tests_get_none():
    tree = {"pkg/__init__.py": "", "pkg/mod.py": SOURCE, "tests/test_mod.py": "from pkg import mod, broken\n",
            "pkg/test_inline.py": "", "conftest.py": "", "README.md": "# x\n", "pkg/broken.py": "def (:\n"}
    files = bytecode.bytecode_files(tree)
    assert sorted(files) == sorted(importlib.util.cache_from_source(p, optimization="") for p in
                                   ("pkg/__init__.py", "pkg/mod.py"))
    pyc = files[importlib.util.cache_from_source("pkg/mod.py", optimization="")]
    assert pyc[:4] == importlib.util.MAGIC_NUMBER and pyc[4:8] == (0b11).to_bytes(4, "little")
    assert pyc[8:16] == importlib.util.source_hash(SOURCE.encode())


def test_python_runs_the_bytecode_of_the_very_source_beside_it(tmp_path):
    # A pyc made for SOURCE but holding other code: if Python runs that code, it used the pyc.
    forged = bytecode.bytecode_files({"pkg/mod.py": "VALUE = 'from the bytecode'\n"}, ["pkg.mod"])
    rel, pyc = next(iter(forged.items()))
    pyc = pyc[:8] + importlib.util.source_hash(SOURCE.encode()) + pyc[16:]
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": SOURCE, rel: pyc})
    value, path = _value(tmp_path).split("|")
    assert value == "from the bytecode" and path == str(tmp_path / "pkg" / "mod.py")


def test_a_source_changed_after_compiling_is_compiled_afresh(tmp_path):
    files = bytecode.bytecode_files({"pkg/__init__.py": "", "pkg/mod.py": SOURCE}, ["pkg.mod"])
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": "VALUE = 'edited'\n", **files})
    assert _value(tmp_path).split("|")[0] == "edited"


def test_only_the_modules_the_tests_can_import_are_compiled():
    tree = {
        "app/__init__.py": "",
        "app/core.py": "from .util import helper\nfrom . import (\n    extra,\n)\n",
        "app/util.py": "import os\n",
        "app/extra.py": "",
        "app/unused.py": "",
        "app/sub/__init__.py": "from ..util import helper\n",
        "app/sub/deep.py": "",
        "other/__init__.py": "",
        "tests/test_core.py": "import app.core as core\n\ndef test_x():\n    pass\n",
    }
    assert bytecode.reachable_modules(tree) == {"app/__init__.py", "app/core.py", "app/util.py", "app/extra.py"}
    # the runner's own imports are followed too
    assert "app/sub/deep.py" in bytecode.reachable_modules(tree, ["app.sub.deep"])
    # a file that walks a package with pkgutil reaches every module of it (the import smoke test)
    smoke = {**tree, "tests/test_modules_import.py": "import pkgutil\nimport app\n\n"
             "names = [m.name for m in pkgutil.walk_packages(app.__path__, 'app.')]\n"}
    assert bytecode.reachable_modules(smoke) == {p for p in tree if p.startswith("app/")}
