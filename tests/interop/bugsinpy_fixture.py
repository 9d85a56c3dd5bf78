"""Build small BugsInPy-v2 parquets in the dataset's format (independently of the importer)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

BUGGY_ADD = '''"""Arithmetic helpers."""


def add(a, b):
    """Return the sum of a and b."""
    return a - b


def double(x):
    """Return twice x."""
    return add(x, x)
'''

FIXED_ADD = BUGGY_ADD.replace("return a - b", "return a + b")

TEST_ADD = '''from solution import add, double


def test_add_small():
    assert add(2, 3) == 5


def test_add_zero():
    assert add(0, 7) == 7


def test_double():
    assert double(4) == 8
'''

# A starter that fails at import: the module uses os without importing it.
BUGGY_IMPORT = '''"""Path helpers."""

SEP = os.sep


def join(a, b):
    """Join two path parts."""
    return a + b
'''

FIXED_IMPORT = '''"""Path helpers."""

import os

SEP = os.sep


def join(a, b):
    """Join two path parts."""
    return a + SEP + b
'''

TEST_IMPORT = '''import os

from solution import join


def test_join():
    assert join("a", "b") == "a" + os.sep + "b"
'''

# A test file broken independently of any solution (a stray markdown fence).
BROKEN_TEST = '''```python
from solution import add

def test_add():
    assert add(1, 1) == 2
```
'''

# A module with a class, an exception and parametrized, unittest and raises-style tests.
BUGGY_PARSE = '''"""Key=value parsing."""


class ParseError(ValueError):
    """A part that is not key=value."""


def parse(line):
    """Parse 'k=v;k2=v2' into a dict of ints."""
    out = {}
    for part in line.split(";"):
        if not part:
            continue
        if "=" not in part:
            raise ParseError(f"no '=' in {part!r}")
        k, v = part.split("=")
        out[k.strip()] = int(v)
    return out


def total(line):
    """The sum of the values."""
    return sum(parse(line).values()) + 1
'''

FIXED_PARSE = BUGGY_PARSE.replace("sum(parse(line).values()) + 1", "sum(parse(line).values())")

TEST_PARSE = '''import unittest

import pytest

from solution import ParseError, parse, total

EMPTY = {}


@pytest.mark.parametrize("line, want", [("a=1;b=2", 3), ("x=5", 5), ("", 0)])
def test_total(line, want):
    assert total(line) == want


def test_parse_pairs():
    expected = {"a": 1, "b": 2}
    assert parse("a=1;b=2") == expected
    assert parse("") == EMPTY


def test_bad_part():
    with pytest.raises(ParseError, match="no '='"):
        parse("oops")


class TestTotal(unittest.TestCase):
    def test_single(self):
        self.assertEqual(total("k=7"), 7)
        self.assertRaises(ValueError, parse, "k")
'''

# A test file the dataset's fixed solution fails in part, and an assertion only the fixed values decide.
TEST_ORACLE = '''from solution import add, double


def test_add():
    assert add(2, 3) == 5


def test_double_is_positive():
    assert double(4) > 0


def test_wrong_in_the_dataset():
    assert add(1, 1) == 3
'''

# A test file with no assertion the host can judge.
TEST_NOTHING = '''from solution import add


def test_runs():
    add(1, 2)
'''

TEST_SH = "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n# (the dataset's verifier script)\n"
TEST_STATE = "def test_state():\n    assert open('/logs/verifier/reward.txt').read().strip() == '1'\n"
DOCKERFILE = "FROM python:3.10-slim\nRUN pip install pytest\nCOPY solution.py /app/solution.py\n"


def task_files(name: str, solution: str | bytes, test: str, instruction: str, project: str = "demo",
               fixed: str | None = None) -> dict[str, bytes]:
    """The files of one dataset task dir (`fixed`: a fixed solution.py, which the dataset's rows lack)."""
    meta = {"source": "bugsinpy", "project": project, "buggy_commit": "a" * 40, "fixed_commit": "b" * 40}
    extra = {"solution/solution.py": fixed.encode()} if fixed is not None else {}
    return {**extra,
        "instruction.md": instruction.encode(),
        "metadata.json": json.dumps(meta).encode(),
        "task.toml": f'version = "1.0"\n\n[metadata]\nname = "{name}"\n'.encode(),
        "environment/Dockerfile": DOCKERFILE.encode(),
        "environment/solution.py": solution if isinstance(solution, bytes) else solution.encode(),
        "tests/test.sh": TEST_SH.encode(),
        "tests/test_solution.py": test.encode(),
        "tests/test_state.py": TEST_STATE.encode(),
        "tests/config.json": b'{"weights": {"test_state.py": 1.0}}',
    }


def tar_gz(files: dict[str, bytes], top: str | None = None) -> bytes:
    """A gzipped tar of `files`, optionally under one top dir."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tf:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{top}/{rel}" if top else rel)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return out.getvalue()


def good_rows() -> list[tuple[str, bytes]]:
    """Three well-formed tasks: test-driven, buggy import, broken test file (fallback)."""
    return [
        ("bugsinpy-0001", tar_gz(task_files("bugsinpy-0001", BUGGY_ADD, TEST_ADD, "add() returns wrong sums.\n"))),
        ("bugsinpy-0002", tar_gz(task_files("bugsinpy-0002", BUGGY_IMPORT, TEST_IMPORT, "join() is broken.\n", "paths"),
                                 top="bugsinpy-0002")),
        ("bugsinpy-0003", tar_gz(task_files("bugsinpy-0003", BUGGY_ADD, BROKEN_TEST, "add() is wrong again.\n"))),
    ]


def more_rows() -> list[tuple[str, bytes]]:
    """Richer tests (parametrize, raises, unittest) and a row with a fixed solution."""
    return [
        ("bugsinpy-0004", tar_gz(task_files("bugsinpy-0004", BUGGY_ADD, TEST_ORACLE, "add() is wrong.\n",
                                            fixed=FIXED_ADD))),
        ("bugsinpy-0005", tar_gz(task_files("bugsinpy-0005", BUGGY_PARSE, TEST_PARSE, "total() is off by one.\n"))),
    ]


def bad_rows() -> list[tuple[object, object]]:
    """Malformed rows: each must be reported and skipped."""
    no_solution = task_files("bugsinpy-0011", BUGGY_ADD, TEST_ADD, "x\n")
    del no_solution["environment/solution.py"]
    return [
        ("bugsinpy-0010", b"this is not a gzipped tar"),
        ("bugsinpy-0011", tar_gz(no_solution)),
        ("bugsinpy-0012", tar_gz(task_files("bugsinpy-0012", b"def f():\n    return '\xff\xfe'\n", TEST_ADD, "x\n"))),
        (None, tar_gz(task_files("nameless", BUGGY_ADD, TEST_ADD, "x\n"))),
        ("bugsinpy-0001", tar_gz(task_files("bugsinpy-0001", BUGGY_ADD, TEST_ADD, "duplicate\n"))),
        ("bugsinpy-0014", None),
        ("bugsinpy-0015", tar_gz(task_files("bugsinpy-0015", BUGGY_ADD, TEST_NOTHING, "x\n"))),
        ("bugsinpy-0016", tar_gz(task_files("bugsinpy-0016", BUGGY_ADD, TEST_ADD, "x\n", fixed=BUGGY_IMPORT))),
    ]


def write_parquet(path: Path, rows: list[tuple[object, object]]) -> Path:
    """Write rows as the dataset's parquet (columns path, task_binary)."""
    table = pa.table(
        {"path": pa.array([r[0] for r in rows], pa.string()), "task_binary": pa.array([r[1] for r in rows], pa.binary())}
    )
    pq.write_table(table, path)
    return path
