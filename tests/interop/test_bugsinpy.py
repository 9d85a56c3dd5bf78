"""BugsInPy-v2 import/export and the dataset's verifier as a grading mode, on observations."""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sdebench.interop import bugsinpy as bp
from sdebench.interop.bugsinpy_verifier import grade_bugsinpy
from sdebench.sandbox import make_factory
from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from tests.interop import bugsinpy_fixture as fx


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, bp.Report, Path]:
    """The fixture parquet (good, richer and malformed rows) imported once."""
    tmp = tmp_path_factory.mktemp("bugsinpy")
    parquet = fx.write_parquet(tmp / "tasks.parquet", fx.good_rows() + fx.more_rows() + fx.bad_rows())
    out = tmp / "tasks"
    return out, bp.import_parquet(parquet, out, make_factory({"backend": "unsafe_local"})), parquet


@pytest.fixture
def factory():
    return make_factory({"backend": "unsafe_local"})


def workspace(task_dir: Path, tmp: Path, solution: str | None) -> Path:
    """The task's repo checked out, with solution.py replaced (None: removed, "": unchanged)."""
    ws = repo_mod.unbundle(load(task_dir).bundle, tmp / "ws")
    if solution is None:
        (ws / "solution.py").unlink()
    elif solution:
        (ws / "solution.py").write_text(solution)
    return ws


GOOD = ["bugsinpy-0001", "bugsinpy-0002", "bugsinpy-0003", "bugsinpy-0004", "bugsinpy-0005"]


def test_import_keeps_good_rows_and_reports_each_bad_one(imported):
    out, report, _ = imported
    assert report.done == GOOD
    reasons = {s.where: s.reason for s in report.skipped}
    assert len(reasons) == 8
    assert "not a gzipped tar" in reasons["row 5 (bugsinpy-0010)"]
    assert "missing environment/solution.py" in reasons["row 6 (bugsinpy-0011)"]
    assert "environment/solution.py is not UTF-8" in reasons["row 7 (bugsinpy-0012)"]
    assert "path is empty" in reasons["row 8"]
    assert "duplicate" in reasons["row 9 (bugsinpy-0001)"]
    assert "task_binary is NoneType" in reasons["row 10 (bugsinpy-0014)"]
    assert reasons["row 11 (bugsinpy-0015)"] == ("no test of tests/test_solution.py can be judged on the host "
                                                 "(test_runs: holds no assertion the host can judge)")
    assert reasons["row 12 (bugsinpy-0016)"].startswith("the fixed solution fails to import: NameError")
    assert sorted(p.name for p in out.iterdir()) == GOOD
    notes = {(n.where, n.reason) for n in report.notes}
    assert ("bugsinpy-0004", "not graded: test_wrong_in_the_dataset: fails on the dataset's fixed solution") in notes
    assert any(w == "bugsinpy-0003" and r.startswith("fallback (the basic check decides)") for w, r in notes)


def test_imported_task_layout(imported):
    out, _, _ = imported
    task = load(out / "bugsinpy-0002")  # packed under a top dir in its tar
    assert task.grader == "bugsinpy" and task.source == "none" and "imported:bugsinpy" in task.tags
    assert "project:paths" in task.tags
    assert task.statement == "join() is broken."
    assert task.oracle_patch == "" and task.conventional_patch == ""
    assert list(task.hidden_files()) == ["tests/test_solution.py"]
    assert task.head_sha == repo_mod.head_sha(repo_mod.unbundle(task.bundle, out.parent / "check" / "r"))
    tree = repo_mod.read_tree(out.parent / "check" / "r")
    assert tree == {"solution.py": fx.BUGGY_IMPORT}  # the test never enters the repo
    assert (task.path / "bugsinpy" / "tests" / "test.sh").read_text() == fx.TEST_SH
    # The original test is kept verbatim for export, in the task dir (masked from every sandbox).
    assert (task.path / "bugsinpy" / "tests" / "test_solution.py").read_text() == fx.TEST_IMPORT
    assert 'grader = "bugsinpy"' in (task.path / "task.toml").read_text()
    assert load(task.path).to_toml() == (task.path / "task.toml").read_text()


def _asserted_literals(source: str) -> set[str]:
    """The texts of the literal operands of a module's assertions (what answers them)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            out |= {ast.unparse(o) for o in [node.left, *node.comparators] if isinstance(o, ast.Constant | ast.Dict)}
    return out


def _preamble(node: ast.stmt) -> bool:
    """The rewrite's own definitions (all named with its prefix)."""
    names = [node.name] if isinstance(node, ast.FunctionDef | ast.ClassDef) else [
        t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)] or [
        a.asname or "" for a in getattr(node, "names", [])]
    return bool(names) and all(n.startswith("_sdebench_") for n in names)


@pytest.mark.parametrize("task_id", ["bugsinpy-0001", "bugsinpy-0004", "bugsinpy-0005"])
def test_the_hidden_test_holds_inputs_only(imported, task_id):
    """No assertion, expected literal, expected parametrize value, literal binding or expected exception
    class is left in what runs beside the submission; they are in the host table."""
    out, _, _ = imported
    task = load(out / task_id)
    hidden = task.hidden_files()["tests/test_solution.py"]
    original = (task.path / "bugsinpy" / "tests" / "test_solution.py").read_text()
    tree = ast.parse(hidden)
    tree.body = [n for n in tree.body if not _preamble(n)]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Assert | ast.Compare)]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith("assert")]
    table = json.loads((task.path / "expected.json").read_text())
    assert table["format"] == "bugsinpy-checks-1" and table["tests"]
    if task_id == "bugsinpy-0005":
        for gone in ("want", "expected", "EMPTY", "ParseError", "no '='", "{'a': 1, 'b': 2}"):
            assert gone not in hidden, gone
        rows = table["tests"]["tests/test_solution.py::test_total"]["params"]
        assert sorted(r["want"] for r in rows.values()) == ["0", "3", "5"]
    else:  # every literal operand of the original's assertions is on the host, in a check
        on_host = {c["expr"][1][2][1] for c in table["checks"].values() if c["expr"][1][2][0] == "lit"}
        assert _asserted_literals(original) == on_host


def test_an_expected_side_computed_from_the_tests_imports_alone_moves_to_the_host(imported):
    """`"a" + os.sep + "b"` needs no solution: computed once at import (in a sandbox without one), its value
    is in the host table and the hidden test observes only `join("a", "b")`."""
    out, _, _ = imported
    task = load(out / "bugsinpy-0002")
    hidden = task.hidden_files()["tests/test_solution.py"]
    assert "os.sep" not in hidden and "_sdebench_check(0, lambda: join('a', 'b'))" in hidden
    table = json.loads((task.path / "expected.json").read_text())
    assert table["checks"]["0"]["expr"] == ["cmp", [["leaf", 0], "==", ["val", ["str", "a" + os.sep + "b"]]]]


def test_an_old_imported_task_is_an_error_naming_the_re_import(imported, factory, tmp_path):
    out, _, _ = imported
    old = tmp_path / "old"
    shutil.copytree(out / "bugsinpy-0001", old)
    (old / "expected.json").unlink()
    g = grade_bugsinpy(load(old), workspace(old, tmp_path, fx.FIXED_ADD), factory)
    assert not g.resolved and g.error == (
        "task bugsinpy-0001 was imported before its assertions were judged on the host: "
        "re-import it (python -m sdebench.interop bugsinpy-import PARQUET --out TASKS_DIR)")


@pytest.mark.parametrize(
    ("scenario", "solution", "reward", "guard"),
    [
        ("unchanged buggy solution", "", 0, "unchanged"),
        ("empty /app (no solution.py)", None, 0, "missing"),
        ("changed but fails to import", fx.FIXED_ADD + "\nimport no_such_module_here\n", 0, "import:solution"),
        ("changed but tests still fail", fx.BUGGY_ADD.replace("a - b", "a * b"), 0, None),
        ("changed and all tests pass", fx.FIXED_ADD, 1, None),
    ],
)
def test_the_five_validation_scenarios(imported, factory, tmp_path, scenario, solution, reward, guard):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    g = grade_bugsinpy(task, workspace(task.path, tmp_path, solution), factory)
    assert g.reward["binary"] == reward, (scenario, g.feedback, g.error)
    assert g.resolved is bool(reward)
    assert g.guards == ([guard] if guard else [])
    assert g.error is None
    if scenario == "changed and all tests pass":
        assert g.pass_ratio == 1.0 and g.counts["HIDDEN_TO_PASS"] == {"passed": 3, "total": 3}
    if scenario == "changed but tests still fail":
        # 2*3 != 5 and 0*7 != 7 but 4*4 != 8 too: every test fails
        assert g.pass_ratio == 0.0 and g.counts["HIDDEN_TO_PASS"] == {"passed": 0, "total": 3}


def test_partial_fix_reports_pass_ratio(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    partial = fx.BUGGY_ADD.replace("return a - b", "return a + b if a else a - b")  # add(0, 7) still wrong
    g = grade_bugsinpy(task, workspace(task.path, tmp_path, partial), factory)
    assert not g.resolved and g.pass_ratio == pytest.approx(2 / 3)


def test_compile_guard(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    g = grade_bugsinpy(task, workspace(task.path, tmp_path, "def add(a, b:\n    return a + b\n"), factory)
    assert g.guards == ["compile:solution.py"] and not g.resolved
    assert "does not compile" in g.feedback


def test_buggy_starter_that_fails_to_import(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0002")
    half = fx.BUGGY_IMPORT.replace("return a + b", "return a + '/' + b")  # changed, still no import os
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "a", half), factory)
    assert g.guards == ["import:solution"] and "NameError" in g.feedback
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "b", fx.FIXED_IMPORT), factory)
    assert g.resolved and g.pass_ratio == 1.0


def test_uncollectable_test_file_falls_back_to_the_basic_check(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0003")
    assert json.loads((task.path / "expected.json").read_text())["fallback"].startswith("tests/test_solution.py "
                                                                                      "does not parse")
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "a", fx.FIXED_ADD), factory)
    assert g.resolved and g.tests == [] and "basic check" in g.feedback
    # The fallback still needs a change and an import.
    assert not grade_bugsinpy(task, workspace(task.path, tmp_path / "b", ""), factory).resolved
    broken = fx.FIXED_ADD + "\nraise RuntimeError('boom')\n"
    assert grade_bugsinpy(task, workspace(task.path, tmp_path / "c", broken), factory).guards == ["import:solution"]


def test_breaking_collection_of_a_good_test_file_is_no_fallback(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    only_add = 'def add(a, b):\n    return a + b\n'  # `double` gone: the test file cannot import it
    g = grade_bugsinpy(task, workspace(task.path, tmp_path, only_add), factory)
    assert not g.resolved and {t.outcome for t in g.tests} == {"missing"}
    assert g.feedback == "Not resolved.\nHeld-out tests fail."  # nothing about why (binary policy)


def test_a_broken_original_import_is_no_fallback(imported, factory, tmp_path):
    """The buggy starter of 0002 fails to import, so the test file cannot be collected against it: that
    says nothing about the file, and a solution that drops `join` is not resolved by the fallback."""
    out, _, _ = imported
    task = load(out / "bugsinpy-0002")
    g = grade_bugsinpy(task, workspace(task.path, tmp_path, "import os\nSEP = os.sep\n"), factory)
    assert not g.resolved and g.guards == [] and g.error is None


def test_richer_tests_parametrize_raises_unittest(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0005")
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "fixed", fx.FIXED_PARSE), factory)
    assert g.resolved and g.pass_ratio == 1.0 and len(g.tests) == 4, g.feedback
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "still", fx.BUGGY_PARSE.replace("+ 1", "+ 2")), factory)
    outcomes = {t.id.split("::", 1)[1]: t.outcome for t in g.tests}
    assert not g.resolved and outcomes == {"test_total": "failed", "test_parse_pairs": "passed",
                                           "test_bad_part": "passed", "TestTotal::test_single": "failed"}
    # The expected exception and its message are judged on the host: a TypeError or another message fails.
    wrong = fx.FIXED_PARSE.replace('raise ParseError(f"no \'=\' in {part!r}")', 'raise ParseError("bad part")')
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "msg", wrong), factory)
    assert {t.id.split("::", 1)[1]: t.outcome for t in g.tests}["test_bad_part"] == "failed"
    other = fx.FIXED_PARSE.replace('raise ParseError(f"no \'=\' in {part!r}")', 'raise TypeError("no \'=\'")')
    g = grade_bugsinpy(task, workspace(task.path, tmp_path / "type", other), factory)
    outcomes = {t.id.split("::", 1)[1]: t.outcome for t in g.tests}
    assert outcomes["test_bad_part"] == "failed" and outcomes["TestTotal::test_single"] == "failed"


def test_a_fixed_solution_records_exact_values(imported, factory, tmp_path):
    """Where the row had a fixed solution, its values decide: `double(4) > 0` needs 8, not any positive."""
    out, _, _ = imported
    task = load(out / "bugsinpy-0004")
    table = json.loads((task.path / "expected.json").read_text())
    assert sorted(table["oracle"]) == ["tests/test_solution.py::test_add", "tests/test_solution.py::test_double_is_positive"]
    assert g_of(task, tmp_path / "fixed", fx.FIXED_ADD, factory).resolved
    loose = fx.FIXED_ADD.replace('    """Return twice x."""\n    return add(x, x)', '    """Return twice x."""\n    return 1')
    g = g_of(task, tmp_path / "loose", loose, factory)
    assert not g.resolved and [t.outcome for t in g.tests] == ["passed", "failed"]


def g_of(task, tmp: Path, solution: str, factory):
    return grade_bugsinpy(task, workspace(task.path, tmp, solution), factory)


def test_agent_tests_and_conftest_are_not_graded(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    ws = workspace(task.path, tmp_path, fx.BUGGY_ADD.replace("a - b", "a * b"))
    (ws / "conftest.py").write_text("import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    pass\n")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_solution.py").write_text("def test_ok():\n    pass\n")
    g = grade_bugsinpy(task, ws, factory)
    assert not g.resolved and g.counts["HIDDEN_TO_PASS"] == {"passed": 0, "total": 3}


def test_feedback_holds_nothing_of_the_held_out_run(imported, factory, tmp_path):
    """The import error text comes from a run with no test of the task present: a solution that reads
    every test file it can see and raises with their contents finds none."""
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    snoop = fx.FIXED_ADD + ("\nimport glob\nfound = {f: open(f).read() for f in glob.glob('**/*.py', recursive=True)"
                            " if 'test' in f}\nraise ImportError(repr(sorted(found)) + repr(found))\n")
    g = grade_bugsinpy(task, workspace(task.path, tmp_path, snoop), factory)
    assert g.guards == ["import:solution"] and "test_solution.py'" not in g.feedback
    assert "add(2, 3)" not in g.feedback and "_sdebench" not in g.feedback


def test_grader_never_raises(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    g = grade_bugsinpy(task, tmp_path / "nowhere", factory)
    assert not g.resolved and "not a directory" in g.error


def test_export_round_trip(imported, tmp_path):
    out, _, _ = imported
    tasks = [load(out / n) for n in GOOD]
    report = bp.export_parquet(tasks, tmp_path / "again.parquet")
    assert report.done == [t.id for t in tasks] and report.skipped == []
    original = {name: bp.read_tar(blob) for name, blob in fx.good_rows() + fx.more_rows()}
    exported = pq.read_table(tmp_path / "again.parquet").to_pylist()
    assert [r["path"] for r in exported] == [t.id for t in tasks]
    for r in exported:
        assert bp.read_tar(r["task_binary"]) == original[r["path"]], r["path"]
    # Deterministic bytes: exporting again gives the same file.
    bp.export_parquet(tasks, tmp_path / "third.parquet")
    assert (tmp_path / "third.parquet").read_bytes() == (tmp_path / "again.parquet").read_bytes()
    # And the export imports back to the same tasks.
    back = bp.import_parquet(tmp_path / "again.parquet", tmp_path / "back", make_factory({"backend": "unsafe_local"}))
    assert back.done == report.done
    for t in tasks:
        again = load(tmp_path / "back" / t.id)
        assert again.to_toml() == t.to_toml() and again.content_hash() == t.content_hash()


def test_export_skips_multi_file_tasks_with_a_reason(tasks_dir, tmp_path):
    task = load(tasks_dir / "billing-rounding-v0-K")
    report = bp.export_parquet([task], tmp_path / "x.parquet")
    assert report.done == [] and "not a single-file task" in report.skipped[0].reason


def test_export_of_a_task_without_originals_writes_a_full_task_dir(imported, tmp_path):
    out, _, _ = imported
    src = out / "bugsinpy-0001"
    bare = tmp_path / "bare"
    shutil.copytree(src, bare)
    shutil.rmtree(bare / "bugsinpy")
    with pytest.raises(bp.NotExportable, match="original test file"):
        bp.export_files(load(bare))  # the hidden test is the rewrite: it is not the dataset's file
    (bare / "bugsinpy" / "tests").mkdir(parents=True)
    shutil.copyfile(src / "bugsinpy" / "tests" / "test_solution.py", bare / "bugsinpy" / "tests" / "test_solution.py")
    files = bp.export_files(load(bare))
    assert sorted(files) == sorted(fx.task_files("x", "", "", "").keys())
    assert files["instruction.md"] == b"add() returns wrong sums.\n"
    assert b"/logs/verifier/reward.txt" in files["tests/test.sh"]


def test_not_a_parquet_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_text("nope")
    with pytest.raises(bp.FormatError, match="not a readable parquet"):
        bp.import_parquet(bad, tmp_path / "out")
    import pyarrow as pa

    pq.write_table(pa.table({"name": ["a"]}), tmp_path / "y.parquet")
    with pytest.raises(bp.FormatError, match="missing column"):
        bp.import_parquet(tmp_path / "y.parquet", tmp_path / "out")


def test_grade_dispatches_on_the_task_grader(imported, factory, tmp_path):
    from sdebench.grading.grade import grade

    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    g = grade(task, workspace(task.path, tmp_path, fx.FIXED_ADD), factory)
    assert g.resolved and g.reward["verifier"] == "bugsinpy" and g.reward["binary"] == 1.0


@pytest.mark.bwrap
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_five_scenarios_under_bubblewrap_with_the_task_store_masked(imported, tmp_path):
    out, _, _ = imported
    local = make_factory({"backend": "local", "tasks_dir": str(out)})
    task = load(out / "bugsinpy-0001")
    cases = [("", 0), (None, 0), (fx.FIXED_ADD + "\nimport no_such_module_here\n", 0),
             (fx.BUGGY_ADD.replace("a - b", "a * b"), 0), (fx.FIXED_ADD, 1)]
    for i, (solution, reward) in enumerate(cases):
        g = grade_bugsinpy(task, workspace(task.path, tmp_path / str(i), solution), local)
        assert g.reward["binary"] == reward and g.error is None, (i, g.feedback)
    # A solution that tries to read the hidden test or the host table from the task store sees nothing there.
    peek = fx.FIXED_ADD + (f"\nimport os\nassert not os.path.exists({str(out / 'bugsinpy-0001' / 'hidden')!r})\n"
                           f"assert not os.path.exists({str(out / 'bugsinpy-0001' / 'expected.json')!r})\n")
    assert grade_bugsinpy(task, workspace(task.path, tmp_path / "peek", peek), local).resolved


def test_grader_field_keeps_existing_task_files_byte_identical(tasks_dir):
    from sdebench.tasks.record import discover

    for d in discover(tasks_dir):
        t = load(d)
        assert t.grader == "sdebench" and "grader" not in (d / "task.toml").read_text()
        assert t.to_toml() == (d / "task.toml").read_text(), d.name


def test_grader_field_is_validated_and_only_bugsinpy_may_lack_test_ids(imported, tmp_path):
    from sdebench.tasks.record import TaskError

    out, _, _ = imported
    copy = tmp_path / "t"
    shutil.copytree(out / "bugsinpy-0001", copy)
    text = (copy / "task.toml").read_text()
    (copy / "task.toml").write_text(text.replace('grader = "bugsinpy"', 'grader = "other"'))
    with pytest.raises(TaskError, match="field 'grader' must be one of sdebench, bugsinpy"):
        load(copy)
    (copy / "task.toml").write_text(text.replace('grader = "bugsinpy"\n', ""))
    with pytest.raises(TaskError, match="'tests.FAIL_TO_PASS' must not be empty"):
        load(copy)
