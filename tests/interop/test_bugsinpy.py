"""BugsInPy-v2 import/export and the dataset's verifier as a grading mode."""

from __future__ import annotations

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
    """The fixture parquet (good and malformed rows) imported once."""
    tmp = tmp_path_factory.mktemp("bugsinpy")
    parquet = fx.write_parquet(tmp / "tasks.parquet", fx.good_rows() + fx.bad_rows())
    out = tmp / "tasks"
    return out, bp.import_parquet(parquet, out), parquet


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


def test_import_keeps_good_rows_and_reports_each_bad_one(imported):
    out, report, _ = imported
    assert report.done == ["bugsinpy-0001", "bugsinpy-0002", "bugsinpy-0003"]
    reasons = {s.where: s.reason for s in report.skipped}
    assert len(reasons) == 6
    assert "not a gzipped tar" in reasons["row 3 (bugsinpy-0010)"]
    assert "missing environment/solution.py" in reasons["row 4 (bugsinpy-0011)"]
    assert "environment/solution.py is not UTF-8" in reasons["row 5 (bugsinpy-0012)"]
    assert "path is empty" in reasons["row 6"]
    assert "duplicate" in reasons["row 7 (bugsinpy-0001)"]
    assert "task_binary is NoneType" in reasons["row 8 (bugsinpy-0014)"]
    assert sorted(p.name for p in out.iterdir()) == ["bugsinpy-0001", "bugsinpy-0002", "bugsinpy-0003"]


def test_imported_task_layout(imported):
    out, _, _ = imported
    task = load(out / "bugsinpy-0002")  # packed under a top dir in its tar
    assert task.grader == "bugsinpy" and task.source == "none" and "imported:bugsinpy" in task.tags
    assert "project:paths" in task.tags
    assert task.statement == "join() is broken."
    assert task.oracle_patch == "" and task.conventional_patch == ""
    assert task.hidden_files() == {"tests/test_solution.py": fx.TEST_IMPORT}
    assert task.head_sha == repo_mod.head_sha(repo_mod.unbundle(task.bundle, out.parent / "check" / "r"))
    tree = repo_mod.read_tree(out.parent / "check" / "r")
    assert tree == {"solution.py": fx.BUGGY_IMPORT}  # the test never enters the repo
    assert (task.path / "bugsinpy" / "tests" / "test.sh").read_text() == fx.TEST_SH
    assert not (task.path / "bugsinpy" / "tests" / "test_solution.py").exists()
    assert 'grader = "bugsinpy"' in (task.path / "task.toml").read_text()
    assert load(task.path).to_toml() == (task.path / "task.toml").read_text()


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
    assert not g.resolved and "against the original" in g.feedback


def test_agent_tests_and_conftest_are_not_graded(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    ws = workspace(task.path, tmp_path, fx.BUGGY_ADD.replace("a - b", "a * b"))
    (ws / "conftest.py").write_text("import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    pass\n")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_solution.py").write_text("def test_ok():\n    pass\n")
    g = grade_bugsinpy(task, ws, factory)
    assert not g.resolved and g.counts["HIDDEN_TO_PASS"] == {"passed": 0, "total": 3}


def test_grader_never_raises(imported, factory, tmp_path):
    out, _, _ = imported
    task = load(out / "bugsinpy-0001")
    g = grade_bugsinpy(task, tmp_path / "nowhere", factory)
    assert not g.resolved and "not a directory" in g.error


def test_export_round_trip(imported, tmp_path):
    out, _, _ = imported
    tasks = [load(out / n) for n in ("bugsinpy-0001", "bugsinpy-0002", "bugsinpy-0003")]
    report = bp.export_parquet(tasks, tmp_path / "again.parquet")
    assert report.done == [t.id for t in tasks] and report.skipped == []
    original = {name: bp.read_tar(blob) for name, blob in fx.good_rows()}
    exported = pq.read_table(tmp_path / "again.parquet").to_pylist()
    assert [r["path"] for r in exported] == [t.id for t in tasks]
    for r in exported:
        assert bp.read_tar(r["task_binary"]) == original[r["path"]], r["path"]
    # Deterministic bytes: exporting again gives the same file.
    bp.export_parquet(tasks, tmp_path / "third.parquet")
    assert (tmp_path / "third.parquet").read_bytes() == (tmp_path / "again.parquet").read_bytes()
    # And the export imports back to the same tasks.
    back = bp.import_parquet(tmp_path / "again.parquet", tmp_path / "back")
    assert back.done == report.done
    for t in tasks:
        assert load(tmp_path / "back" / t.id).to_toml() == t.to_toml()


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
    # A solution that tries to read the hidden test from the task store sees nothing there.
    peek = fx.FIXED_ADD + f"\nimport os\nassert not os.path.exists({str(out / 'bugsinpy-0001' / 'hidden')!r})\n"
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
