"""The naive memory readers as agents: memory from the delivery's channels only, no answer key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sdebench.agents.families import dump
from sdebench.agents.readers import LatestReader, MajorityReader, TopOneReader
from sdebench.agents.tools import Toolbox
from sdebench.agents.trajectory import read
from sdebench.generation import generate
from sdebench.runs.assemble import run_episode
from sdebench.sandbox import make_factory
from sdebench.tasks.record import load
from tests.hardfixture import write_conflict_family

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = {"backend": "unsafe_local"}


def cfg(agent: str, delivery: str, generators: Path | None = None) -> dict:
    return {"agent": {"name": agent, "generators": str(generators) if generators else None},
            "model": {"name": "none"}, "delivery": {"name": delivery}, "seed": 0, "max_interventions": 5,
            "limits": {"max_turns": 500, "max_cost_usd": 2.0, "max_wall_s": 600}}


def episode(task_dir: Path, agent: str, delivery: str, tmp_path: Path, generators: Path | None = None):
    traj = tmp_path / f"{agent}-{delivery}.jsonl"
    rec = run_episode(load(task_dir), cfg(agent, delivery, generators), make_factory(SANDBOX), trajectory_path=traj)
    notes = [e for e in read(traj) if e["kind"] == "agent_note"]
    return rec, notes[0] if notes else None


def test_readers_take_no_answer_key():
    assert not any(cls.capabilities.needs_answer_key for cls in (TopOneReader, LatestReader, MajorityReader))
    assert [c.name for c in (TopOneReader, LatestReader, MajorityReader)] == \
        ["reader-top1", "reader-latest", "reader-majority"]


@pytest.mark.parametrize("agent,delivery,resolved,items", [
    ("reader-top1", "full", True, 19),  # the repo's 4 commits and 15 artifact items, read through the shell
    ("reader-top1", "memtool", True, 5),  # one search, the tool's default top 5
    ("reader-latest", "inject", False, 19),  # the latest undated mention: the last item, a superseded ADR
    ("reader-majority", "oracle", True, 1),  # the fact sentence
    ("reader-majority", "squashed", False, 1),  # one commit of code: no memory, no change
])
def test_a_reader_reads_what_the_delivery_shows(tmp_path, agent, delivery, resolved, items):
    rec, note = episode(ROOT / "tasks" / "ttlcache-v0-F", agent, delivery, tmp_path)
    assert rec.outcome.error is None, rec.outcome.error
    assert rec.outcome.resolved == resolved and rec.outcome.interventions == (0 if resolved else 5)
    assert note["reader"] == agent and note["items"] == items and note["ranked"] == (delivery == "memtool")
    assert (note["pick"] is None) == (delivery == "squashed")
    if delivery == "squashed":
        assert "write_file" not in rec.usage.tool_calls and rec.usage.tool_calls["submit"] == 6  # resubmits unchanged


def test_on_a_hard_task_the_readers_fail_but_from_the_fact_sentence(tmp_path):
    gens = tmp_path / "gens"
    path = write_conflict_family(gens)
    outcome = generate.build_task(path, 0, "K", tmp_path / "tasks", SANDBOX, generate.probe_variant(path, 0, SANDBOX))
    assert outcome.written, outcome.violations
    task = tmp_path / "tasks" / "conflict-ttl-v0-K"
    for agent, delivery, pick in (("reader-latest", "full", "600"), ("reader-majority", "inject", "300"),
                                  ("reader-top1", "oracle", None)):
        rec, note = episode(task, agent, delivery, tmp_path, gens)
        assert rec.outcome.error is None and rec.identity.competency == "conflict"
        assert rec.outcome.resolved == (delivery == "oracle"), (agent, delivery, note)
        assert pick is None or note["pick"] == pick


def test_a_workspace_of_no_family_is_an_episode_error(tmp_path):
    rec, _ = episode(ROOT / "tasks" / "ttlcache-v0-K", "reader-top1", "full", tmp_path, tmp_path)
    assert rec.outcome.stop_reason == "error" and "matches no family" in rec.outcome.error


def test_dump_reads_any_output_whole_through_a_small_output_cap(tmp_path):
    blob = os.urandom(9000) + "é\n".encode() * 3000  # not UTF-8, and longer than one chunk
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "blob.bin").write_bytes(blob)
    with make_factory(SANDBOX).open(ws) as sb:
        box = Toolbox(sb, ("bash",), max_output_chars=3000)  # a chunk's base64 overflows it: read at half size
        assert dump(lambda name, args: box.call(name, args), "cat blob.bin") == blob
        assert dump(lambda name, args: box.call(name, args), "true") == b""
    assert not (ws / ".git" / "reference-agent.out").exists()  # the scratch file is removed
