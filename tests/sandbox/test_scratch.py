"""Scratch dirs: in memory when /dev/shm is usable, else the usual temp dir; TMPDIR always wins."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sdebench.sandbox import scratch


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
