import os

import pytest

from sdebench.sandbox import SandboxError
from sdebench.sandbox.files import copy_tree, resolve_inside


def test_resolve_inside_keeps_paths_in_the_workspace(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "out").symlink_to("/etc")
    assert resolve_inside(tmp_path, "a/b.txt") == tmp_path.resolve() / "a" / "b.txt"
    for bad in ("../x", "a/../../x", "/etc/passwd", "out/hostname"):
        with pytest.raises(SandboxError):
            resolve_inside(tmp_path, bad)


def test_copy_tree_never_follows_links_out_and_skips_specials(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref\n")
    (src / "etc").symlink_to("/etc")
    (src / "passwd").symlink_to("/etc/passwd")
    (src / "alias.py").symlink_to("pkg/m.py")
    (src / "dangling").symlink_to("nowhere")
    os.mkfifo(src / "fifo")
    rep = copy_tree(src, tmp_path / "dest")
    dest = tmp_path / "dest"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == ["alias.py", "pkg", "pkg/m.py"]
    assert (dest / "alias.py").read_text() == "x = 1\n" and not (dest / "alias.py").is_symlink()
    joined = "\n".join(rep.notes)
    for name in ("etc", "passwd", "dangling", "fifo", "alias.py"):
        assert name in joined


def test_copy_tree_enforces_the_size_cap(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "big").write_bytes(b"x" * 3_000_000)
    with pytest.raises(SandboxError, match="exceeds"):
        copy_tree(src, tmp_path / "dest", max_bytes=1_000_000)
