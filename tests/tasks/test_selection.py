"""The one task selector and the one comma-list parser."""

import shutil

import pytest

from sdebench.tasks.record import TaskError, discover
from sdebench.tasks.selection import comma_list, select


def test_comma_list_reads_strings_lists_and_any():
    assert comma_list(" a, b ,,a ") == ("a", "b")
    assert comma_list(["K", "none"]) == ("K", "none") and comma_list(1) == ("1",) and comma_list((0, 1)) == ("0", "1")
    for anything in (None, "", [], "all", "K,all", " , "):
        assert comma_list(anything) is None


def test_select_filters(tasks_dir):
    ks = select(tasks_dir, source="K")
    assert ks and all(t.source == "K" for t in ks)
    some = select(tasks_dir, family="ttlcache", variant="1", source="H,none")
    assert sorted(t.id for t in some) == ["ttlcache-v1-H", "ttlcache-v1-none"]
    assert [t.id for t in select(tasks_dir, ids=["ttlcache-v0-F"])] == ["ttlcache-v0-F"]
    assert [t.id for t in select(tasks_dir, variant=0, family="ttlcache", bottleneck="knowledge-missing", source="X")] \
        == ["ttlcache-v0-X"]
    assert len(select(tasks_dir, source="all")) == len(discover(tasks_dir))


def test_bad_filters_and_dirs_are_one_line_errors(tasks_dir, tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        select(tmp_path / "nope")
    with pytest.raises(TaskError, match=r"unknown source 'Q' \(choose H, K, F, X, none, or all\)"):
        select(tasks_dir, source="K,Q")
    with pytest.raises(TaskError, match="unknown bottleneck 'slow'"):
        select(tasks_dir, bottleneck="slow")
    with pytest.raises(TaskError, match="no task 'no-such-task'"):
        select(tasks_dir, ids="ttlcache-v0-F,no-such-task")


def test_select_by_competency_and_tier(tasks_dir, tmp_path):
    store = tmp_path / "store"
    for name in ("ttlcache-v0-K", "ttlcache-v0-F", "ttlcache-v1-K"):
        shutil.copytree(tasks_dir / name, store / name)
    toml = store / "ttlcache-v0-F" / "task.toml"
    toml.write_text(toml.read_text().replace('competency = "recall"', 'competency = "conflict"'))
    assert [t.id for t in select(store, tier="hard")] == ["ttlcache-v0-F"]
    assert [t.id for t in select(store, competency="conflict,scope")] == ["ttlcache-v0-F"]
    assert [t.id for t in select(store, tier="recall")] == ["ttlcache-v0-K", "ttlcache-v1-K"]
    assert [t.id for t in select(store, tier="hard", competency="recall")] == []
    assert len(select(store, tier="recall,hard")) == 3 == len(select(store, competency="all"))
    with pytest.raises(TaskError, match=r"unknown tier 'easy' \(choose recall, hard, or all\)"):
        select(store, tier="easy")
    with pytest.raises(TaskError, match=r"unknown competency 'guess' \(choose recall, conflict, synthesis, scope, "
                                        r"validity, implicit, or all\)"):
        select(store, competency="guess")


def test_on_error_skips_bad_dirs_and_names_missing_ids(tasks_dir, tmp_path):
    store = tmp_path / "store"
    for name in ("ttlcache-v0-K", "ttlcache-v0-F"):
        shutil.copytree(tasks_dir / name, store / name)
    (store / "ttlcache-v0-F" / "task.toml").write_text("id = 3\n")
    with pytest.raises(TaskError, match="task.toml"):
        select(store)
    problems: list[str] = []
    got = select(store, ids="ttlcache-v0-K,ttlcache-v0-F", on_error=problems.append)
    assert [t.id for t in got] == ["ttlcache-v0-K"]
    assert len(problems) == 2 and "task.toml" in problems[0] and "no task 'ttlcache-v0-F'" in problems[1]
