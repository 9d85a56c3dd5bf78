"""Scratch dirs: in memory when /dev/shm is usable, else the usual temp dir; TMPDIR always wins."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from sdebench.sandbox import make_factory, scratch


def test_a_usable_in_memory_dir_is_chosen_unless_tmpdir_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    assert scratch.scratch_root(tmp_path, min_free=0) == str(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "mine"))
    assert scratch.scratch_root(tmp_path, min_free=0) is None


def test_a_missing_or_full_dir_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    assert scratch.scratch_root(tmp_path / "absent", min_free=0) is None
    assert scratch.scratch_root(tmp_path, min_free=1 << 62) is None


def test_scratch_dir_is_removed_after_use():
    with scratch.scratch_dir("sdebench-test-") as d:
        path = Path(d)
        assert path.is_dir() and path.name.startswith("sdebench-test-")
        assert str(path.parent) == (scratch.scratch_root() or tempfile.gettempdir())
    assert not path.exists()


@pytest.mark.bwrap
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
def test_a_sandbox_never_sees_the_hosts_in_memory_scratch(tmp_path, monkeypatch):
    # generation scratch (hidden tests among it) lives in the host's /dev/shm: an agent's sandbox
    # gets a /dev of its own, so nothing written there is visible from inside
    monkeypatch.delenv("TMPDIR", raising=False)
    if scratch.scratch_root() is None:
        pytest.skip("/dev/shm is not usable for scratch on this machine")
    with scratch.scratch_dir("sdebench-gen-probe-") as d:
        (Path(d) / "test_hidden.py").write_text("ANSWER = 876\n")
        ws = tmp_path / "ws"
        ws.mkdir()
        with make_factory({}).open(ws) as sb:
            r = sb.exec(["sh", "-c", f"ls -A /dev/shm; cat {d}/test_hidden.py"], timeout=30)
    assert r.stdout.strip() == "" and "876" not in r.stdout + r.stderr
    assert r.exit_code != 0  # the cat found nothing
