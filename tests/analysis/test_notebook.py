"""Where the analysis notebook reads from: a relative SDEBENCH_RESULTS is taken from $PWD, not the kernel's cwd."""

from __future__ import annotations

import pytest

from sdebench.analysis.notebook import results_dir


def test_a_relative_path_is_taken_from_the_shells_dir(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    kernel = tmp_path / "experiments"
    kernel.mkdir()
    monkeypatch.chdir(kernel)  # where jupyter starts the kernel
    env = {"SDEBENCH_RESULTS": "results", "PWD": str(tmp_path)}
    assert results_dir(tmp_path / "default", env) == (tmp_path / "results").resolve()
    assert results_dir(tmp_path / "default", {"SDEBENCH_RESULTS": "..", "PWD": str(kernel)}) == tmp_path.resolve()
    # no $PWD: the process's own cwd
    assert results_dir(tmp_path, {"SDEBENCH_RESULTS": "../results"}) == (tmp_path / "results").resolve()


def test_absolute_default_and_missing(tmp_path):
    (tmp_path / "r").mkdir()
    assert results_dir(tmp_path / "none", {"SDEBENCH_RESULTS": str(tmp_path / "r"), "PWD": "/"}) == tmp_path / "r"
    assert results_dir(tmp_path / "r", {}) == tmp_path / "r"
    assert results_dir(tmp_path / "r", {"SDEBENCH_RESULTS": " "}) == tmp_path / "r"
    with pytest.raises(FileNotFoundError, match=f"SDEBENCH_RESULTS=results: no such dir {tmp_path}/results"):
        results_dir(tmp_path / "r", {"SDEBENCH_RESULTS": "results", "PWD": str(tmp_path)})
    with pytest.raises(FileNotFoundError, match="the default results dir: no such dir"):
        results_dir(tmp_path / "gone", {})
