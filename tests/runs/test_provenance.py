"""Provenance lines: what a job notes about the command, code and config that produced its records."""

from __future__ import annotations

import subprocess

from sdebench.runs import provenance, results
from sdebench.runs.budget import SWEEP_ID_ENV

CFG = {"agent": {"name": "oracle"}, "model": {"name": "none"}, "delivery": {"name": "memtool"}, "source": "K",
       "seed": 3, "max_interventions": 5, "limits": {"max_turns": 50}, "tools": {}, "results_dir": "r",
       "select": {"family": "billing-rounding"}}


def test_a_job_notes_command_commit_and_config(tmp_path, monkeypatch):
    monkeypatch.setenv(provenance.COMMAND_ENV, "sdebench run -m delivery=memtool,oracle")
    monkeypatch.setenv(SWEEP_ID_ENV, "sweep-1")
    provenance.note_job(CFG, tmp_path)
    provenance.note_job({**CFG, "delivery": {"name": "oracle"}}, tmp_path)
    (tmp_path / provenance.FILE).open("a").write("{torn\n")
    lines = provenance.read(tmp_path)
    assert len(lines) == 2  # the torn line is skipped
    first = lines[0]
    assert first["command"] == "sdebench run -m delivery=memtool,oracle" and first["sweep_id"] == "sweep-1"
    head = subprocess.run(["git", "-C", str(provenance.CODE_ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert first["commit"] == (head or None) and isinstance(first["dirty"], bool) == bool(head)
    # the hash the records carry, so a report can tell which jobs made its records
    assert first["config_hash"] == results.config_hash(CFG) != lines[1]["config_hash"]
    assert first["config"]["delivery.name"] == "memtool" and first["config"]["select.family"] == "billing-rounding"
    assert first["config_digest"] != lines[1]["config_digest"]
    # never taken for a record
    assert results.record_files(tmp_path) == []


def test_a_results_dir_that_cannot_be_written_is_only_a_warning(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    provenance.note_job(CFG, blocker / "results")  # a file where the dir should be
    assert "could not note the run's provenance" in caplog.text
    assert provenance.read(blocker / "results") == []
