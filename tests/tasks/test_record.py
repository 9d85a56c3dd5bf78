import shutil

import pytest

from sdebench.tasks import record as T


@pytest.fixture()
def one_task(tasks_dir, tmp_path):
    src = tasks_dir / "billing-rounding-v0-K"
    dest = tmp_path / "billing-rounding-v0-K"
    shutil.copytree(src, dest)
    return dest


def test_load_reads_every_field(one_task):
    t = T.load(one_task)
    assert t.id == "billing-rounding-v0-K" and t.source == "K" and t.variant == 0
    assert t.tests.fail_to_pass and t.tests.hidden_to_pass and t.tests.pass_to_pass
    assert "docs/CONVENTIONS.md" in t.memory_artifacts
    assert set(t.hidden_files()) == {"tests/test_hidden_rounding.py"}
    assert t.oracle_patch.startswith("diff --git")
    assert len(t.head_sha) == 40


def test_roundtrip_toml_is_identical(one_task):
    t = T.load(one_task)
    assert t.to_toml() == (one_task / T.TASK_FILE).read_text()


def test_content_hash_changes_with_any_file(one_task):
    t = T.load(one_task)
    h = t.content_hash()
    assert h == T.load(one_task).content_hash()
    (one_task / "oracle.patch").write_text(t.oracle_patch + "\n")
    assert T.load(one_task).content_hash() != h


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda s: s.replace('source = "K"', 'source = "Q"'), "field 'source' must be one of"),
        (lambda s: s.replace("variant = 0", 'variant = "zero"'), "field 'variant' must be int"),
        (lambda s: s.replace('family = "billing-rounding"\n', ""), "missing field 'family'"),
        (lambda s: s.replace("commits = ", "ncommits = "), "missing field 'repo.commits'"),
        (lambda s: s.replace("FAIL_TO_PASS = [", "FAIL_TO_PASS_OLD = ["), "missing field 'tests.FAIL_TO_PASS'"),
        (lambda s: s + "\n[[[", "not valid TOML"),
        (lambda s: s.replace('competency = "recall"', 'competency = "hardest"'), "field 'competency' must be one of"),
    ],
)
def test_malformed_task_names_file_and_field(one_task, edit, needle):
    f = one_task / T.TASK_FILE
    f.write_text(edit(f.read_text()))
    with pytest.raises(T.TaskError) as e:
        T.load(one_task)
    assert needle in str(e.value)
    assert str(f) in str(e.value)
    assert "\n" not in str(e.value)


def test_competency_is_written_and_defaults_to_recall(one_task):
    f = one_task / T.TASK_FILE
    t = T.load(one_task)
    assert t.competency == "recall" and t.tier == "recall" and 'competency = "recall"' in f.read_text()
    f.write_text(f.read_text().replace('competency = "recall"', 'competency = "validity"'))
    assert (T.load(one_task).competency, T.load(one_task).tier) == ("validity", "hard")
    f.write_text(f.read_text().replace('competency = "validity"\n', ""))
    assert T.load(one_task).competency == "recall"  # a task written before competencies existed


def test_missing_bundle_is_named(one_task):
    (one_task / T.BUNDLE).unlink()
    with pytest.raises(T.TaskError, match="repo.bundle: missing task file"):
        T.load(one_task)
