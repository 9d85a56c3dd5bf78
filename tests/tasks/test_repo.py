from pathlib import Path

import pytest

from sdebench.tasks.commits import Commit
from sdebench.tasks import repo

COMMITS = [
    Commit("init", {"pkg/a.py": "x = 1\n", "docs/n.md": "note\n", "old.py": "gone\n"}),
    Commit("change a", {"pkg/a.py": "x = 2\n"}),
    Commit("drop old", {"old.py": None}),
]


def test_same_commits_give_same_shas_and_bundle_bytes(tmp_path):
    shas, bundles = [], []
    for i in range(2):
        d = tmp_path / f"r{i}"
        shas.append(repo.build(d, COMMITS))
        repo.bundle(d, tmp_path / f"{i}.bundle")
        bundles.append((tmp_path / f"{i}.bundle").read_bytes())
    assert shas[0] == shas[1]
    assert bundles[0] == bundles[1]


def test_bundle_roundtrip_keeps_history_and_drops_remote(tmp_path):
    repo.build(tmp_path / "src", COMMITS)
    repo.bundle(tmp_path / "src", tmp_path / "b.bundle")
    dest = repo.unbundle(tmp_path / "b.bundle", tmp_path / "clone")
    assert repo.refs(dest) == ["refs/heads/main"]
    assert repo.head_sha(dest) == repo.head_sha(tmp_path / "src")
    hist = repo.history(dest)
    assert [c.message for c in hist] == ["init", "change a", "drop old"]
    assert hist[1].diffs == {"pkg/a.py": "@@\n-x = 1\n+x = 2"}
    assert (dest / "pkg/a.py").read_text() == "x = 2\n"
    assert not (dest / "old.py").exists()
    # the clone's reflog would say "clone: from <bundle path>": the path names the task and the store
    assert repo._git(dest, "reflog", "show", "--all") == b""
    assert str(tmp_path) not in repo._git(dest, "config", "--list", "--local").decode()


def test_history_reads_every_commit_with_its_diffs(tmp_path):
    repo.build(tmp_path / "r", [*COMMITS, Commit("no newline", {"pkg/a.py": "x = 3"}),
                                Commit("empty file", {"pkg/empty.py": ""})])
    hist = repo.history(tmp_path / "r")
    assert [c.message for c in hist] == ["init", "change a", "drop old", "no newline", "empty file"]
    assert hist[0].diffs == {"docs/n.md": "@@\n+note", "old.py": "@@\n+gone", "pkg/a.py": "@@\n+x = 1"}
    assert hist[2].diffs == {"old.py": "@@\n-gone"}
    assert hist[3].diffs == {"pkg/a.py": "@@\n-x = 2\n+x = 3\n\\ No newline at end of file"}
    assert hist[4].diffs == {"pkg/empty.py": ""}
    assert [c.sha for c in hist] == repo._git(tmp_path / "r", "rev-list", "--reverse", "HEAD").decode().split()
    assert repo.read_tree(tmp_path / "r") == {"docs/n.md": "note\n", "pkg/a.py": "x = 3", "pkg/empty.py": ""}
    assert repo.show_file(tmp_path / "r", "HEAD~3", "old.py") == "gone\n"
    with pytest.raises(repo.RepoError, match="not tracked"):
        repo.show_file(tmp_path / "r", "HEAD", "old.py")
    with pytest.raises(repo.RepoError, match="not a git repo"):
        repo.history(tmp_path)


def test_a_plain_clone_of_the_bundle_checks_out_main(tmp_path):
    repo.build(tmp_path / "src", COMMITS)
    repo.bundle(tmp_path / "src", tmp_path / "b.bundle")
    heads = repo._git(tmp_path, "bundle", "list-heads", str(tmp_path / "b.bundle")).decode().split()
    assert heads[1::2] == ["HEAD", "refs/heads/main"] and heads[0] == heads[2]
    repo._git(tmp_path, "clone", "-q", str(tmp_path / "b.bundle"), "plain")
    assert repo._git(tmp_path / "plain", "symbolic-ref", "HEAD").decode().strip() == "refs/heads/main"
    assert (tmp_path / "plain" / "pkg/a.py").read_text() == "x = 2\n"


def test_bundle_refuses_a_head_off_main(tmp_path):
    repo.build(tmp_path / "src", COMMITS)
    repo._git(tmp_path / "src", "checkout", "-q", "--detach")
    with pytest.raises(repo.RepoError, match="not main"):
        repo.bundle(tmp_path / "src", tmp_path / "b.bundle")


def test_squash_leaves_one_commit_and_nothing_else(tmp_path):
    repo.build(tmp_path / "src", COMMITS)
    repo.squash(tmp_path / "src", tmp_path / "sq", drop=["docs"])
    sq = tmp_path / "sq"
    assert repo.refs(sq) == ["refs/heads/main"]
    assert len(repo.history(sq)) == 1
    assert repo.tracked_files(sq) == ["pkg/a.py"]
    # one commit, one root tree, one subtree, one blob: no object of the old history survives
    assert len(repo.all_objects(sq)) == 4
    assert repo._git(sq, "reflog", "show", "--all") == b""
    assert repo._git(sq, "stash", "list") == b""


def test_diff_files_applies_back(tmp_path):
    repo.build(tmp_path / "r", COMMITS)
    before = {"pkg/a.py": "x = 2\n", "new.py": None}
    after = {"pkg/a.py": "x = 3\n", "new.py": "y = 1\n"}
    repo.apply_patch(tmp_path / "r", repo.diff_files(before, after))
    assert (tmp_path / "r/pkg/a.py").read_text() == "x = 3\n"
    assert (tmp_path / "r/new.py").read_text() == "y = 1\n"


def test_bad_patch_is_a_clear_error(tmp_path):
    repo.build(tmp_path / "r", COMMITS)
    with pytest.raises(repo.RepoError, match="does not apply"):
        repo.apply_patch(tmp_path / "r", repo.diff_files({"pkg/a.py": "nope\n"}, {"pkg/a.py": "x\n"}))


def test_empty_history_rejected(tmp_path: Path):
    with pytest.raises(repo.RepoError):
        repo.build(tmp_path / "r", [])


def test_committed_bundles_carry_head(tasks_dir):
    from sdebench.tasks.record import discover

    for d in discover(tasks_dir):
        heads = repo._git(d, "bundle", "list-heads", "repo.bundle").decode().split()
        assert heads[1::2] == ["HEAD", "refs/heads/main"] and heads[0] == heads[2], d.name
