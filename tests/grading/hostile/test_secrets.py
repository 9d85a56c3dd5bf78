"""Attacks on what grading shows, and on its error/outcome line, built from the workspace alone:

- oracle probes: candidates (fact tokens among them) printed in the failing output and named by
  added files; the same submission graded against a task and its twin that differs only in the
  secret (fact, fact tokens, expected observations, oracle-measured limit) gets byte-identical
  feedback and public view, with every candidate unaltered;
- hostile runner lines (huge numbers, deep JSON, invalid UTF-8, giant lines, forged start/end,
  lines after the end), in the visible phase and in the held-out phase only: always an unresolved
  outcome with its reason recorded, never an infrastructure error;
- phase 2 reaching phase 1: a lock on a shared read-only file, a magic range in /proc/locks,
  files in its out dir, CPU and memory load: phase 1 hears nothing, and (local) every process of
  phase 1 is gone and its feedback fixed before any held-out code starts.

Every family on local (2 grades each), a sample on docker and through the environment server.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import replace

import pytest

from sdebench.delivery.modes import Squashed
from sdebench.grading.grade import grade
from sdebench.grading.rules import is_protected
from sdebench.sandbox import make_factory
from sdebench.tasks import record as task_mod
from sdebench.tasks import repo as repo_mod
from sdebench.testing.sample_task import checkout
from tests.env.helpers import serve
from tests.grading.hostile.probes import CANDIDATE_MARK, candidates, probe_attack, received, refacted
from tests.grading.hostile.test_generic import DOCKER_SAMPLE, FAMILIES, SERVER_SAMPLE, TASKS, _post, task_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """Per family: the task, its twin, and the squashed workspace with the probe attack applied."""
    root = tmp_path_factory.mktemp("probed")
    cache: dict[str, tuple] = {}

    def get(family: str):
        if family not in cache:
            task = task_of(family)
            twin = refacted(task, root / f"{family}-twin")
            ws = Squashed().prepare(task, root / family).workspace
            cands = candidates(task, twin)
            probe_attack(ws, cands)
            cache[family] = (task, twin, ws, cands)
        return cache[family]

    return get


def check_pair(a, b, task, cands) -> None:
    """The same submission graded against a task and its twin: outcomes, identical feedback."""
    for g in (a, b):
        assert g.error is None, f"{task.id}: hostile output became an infrastructure error: {g.error}"
        assert not g.resolved and g.reward["binary"] == 0.0
        # The held-out phase's forged and malformed lines are recorded on the host, as its fault.
        assert g.held_out.get("malformed_lines", 0) >= 7 and "forged or torn" in (g.held_out.get("fault") or "")
    assert a.feedback == b.feedback, f"{task.id}: the feedback depends on the secret"
    assert json.dumps(a.public(), sort_keys=True) == json.dumps(b.public(), sort_keys=True)
    assert "[redacted]" not in a.feedback.lower()
    heard = received(a.feedback)
    assert heard, f"{task.id}: the visible phase's report did not reach the feedback:\n{a.feedback[:2000]}"
    assert all(not any(r.values()) for r in heard), f"{task.id}: phase 1 heard phase 2: {heard}"
    assert f"{CANDIDATE_MARK} " + " | ".join(cands) in a.feedback
    # The files named after candidates are listed as they were named (feedback or, past its cap, the notes).
    named = [tok for tok in cands[:12] if "/" not in tok]
    assert all(any(n.endswith(f"/test_{tok}.py") for n in a.public()["notes"]) for tok in named)
    # The visible run's own malformed lines are its fault, shown to it as such.
    assert "forged or torn" in a.feedback


@pytest.fixture(scope="module")
def local():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return make_factory({"backend": "local", "tasks_dir": str(TASKS)})


@pytest.mark.bwrap
@pytest.mark.parametrize("family", FAMILIES)
def test_feedback_depends_on_nothing_secret_and_hostile_output_is_an_outcome(family, probed, local):
    task, twin, ws, cands = probed(family)
    check_pair(grade(task, ws, local), grade(twin, ws, local), task, cands)


@pytest.mark.docker
@pytest.mark.parametrize("family", DOCKER_SAMPLE)
def test_the_same_on_docker(family, probed, request):
    image = request.getfixturevalue("docker_image")
    factory = make_factory({"backend": "docker", "image": image})
    try:
        task, twin, ws, cands = probed(family)
        check_pair(grade(task, ws, factory), grade(twin, ws, factory), task, cands)
    finally:
        factory.cleanup()


@pytest.mark.bwrap
@pytest.mark.parametrize("family", SERVER_SAMPLE)
def test_the_same_through_the_environment_server(family, probed, tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    task, twin, ws, cands = probed(family)
    root = tmp_path / "served"
    shutil.copytree(task.path, root / task.id)
    shutil.copytree(twin.path, root / "twin")
    doc = (root / "twin" / task_mod.TASK_FILE).read_text().replace(f'id = "{task.id}"', 'id = "twin-task"', 1)
    (root / "twin" / task_mod.TASK_FILE).write_text(doc)
    head = repo_mod.read_tree(Squashed().prepare(task, tmp_path / "head").workspace)
    # The environment takes source edits only (its actions cannot add test files).
    after = {rel: p.read_text() for p in ws.rglob("*.py")
             if ".git" not in p.parts and not is_protected(rel := p.relative_to(ws).as_posix())}
    diff = repo_mod.diff_files({k: v for k, v in head.items() if k in after}, after)
    seen = []
    with serve(root, "--sandbox", "local") as url:
        for tid in (task.id, "twin-task"):
            obs = _post(f"{url}/reset", {"task_id": tid})["observation"]
            seen.append(_post(f"{url}/step", {"episode_id": obs["episode_id"], "action": {"diff": diff}}))
    a, b = seen
    assert not a["observation"]["info"]["all_tests_pass"] and a["reward"] < 1.0
    assert a["observation"]["failing_tests"] == b["observation"]["failing_tests"]
    assert a["reward"] == b["reward"] and a["observation"]["info"] == b["observation"]["info"]
    assert f"{CANDIDATE_MARK} " + " | ".join(cands) in a["observation"]["failing_tests"]
    heard = received(a["observation"]["failing_tests"])
    assert heard and all(not any(r.values()) for r in heard)


# --- hostile runner lines, one kind at a time, on the sample task -------------------------
LINES = {
    "deep_json": 'b"[" * 100000 + b"]" * 100000',
    "huge_number": 'b\'{"k": "test", "id": "x", "outcome": "passed", "duration": \' + b"9" * 5000 + b"}"',
    "float_overflow": 'b\'{"k": "test", "id": "x", "outcome": "passed", "duration": 1e999}\'',
    "invalid_utf8": 'b\'{"k": "test", "id": "\\xff\\xfe", "outcome": "passed"}\'',
    "giant_line": 'b\'{"k": "crash", "message": "\' + b"m" * (5 << 20) + b\'"}\'',
    "forged_start": 'b\'{"k": "start"}\'',
    "forged_end": 'b\'{"k": "end", "exit": 0}\'',
}
HOSTILE_LINE = '''
import json as _json, os as _os, sys as _sys
if _os.path.exists("tests/test_pricing_hidden.py") == {held_out}:
    _m = b"\\n\\x1e" + _json.loads(_sys.argv[1])["marker"].encode() + b" "
    {action}
'''
SAY = "_os.write(1, _m + {payload} + b'\\n')"
# After the runner's own `end`: its last call, os._exit, is looked up at call time.
AFTER_END = ("_exit = _os._exit\n    _os._exit = lambda code: (_os.write(1, _m + b'{\"k\": \"test\", \"id\": \"late\", "
             "\"outcome\": \"passed\"}\\n'), _exit(code))")


@pytest.fixture(scope="module")
def sample_task(tmp_path_factory):
    """The sample task in a store, and a local factory that masks the store."""
    from sdebench.testing.sample_task import write_sample_task

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    store = tmp_path_factory.mktemp("store")
    return write_sample_task(store / "sample"), make_factory({"backend": "local", "tasks_dir": str(store)})


@pytest.mark.bwrap
@pytest.mark.parametrize("held_out", [False, True], ids=["visible", "held_out_only"])
@pytest.mark.parametrize("kind", [*LINES, "after_end"])
def test_each_kind_of_hostile_runner_line_is_an_outcome_with_its_reason(kind, held_out, sample_task, tmp_path):
    sample, factory = sample_task
    ws = checkout(sample, tmp_path / "ws", sample.oracle_patch)
    action = AFTER_END if kind == "after_end" else SAY.format(payload=LINES[kind])
    code = HOSTILE_LINE.format(held_out=held_out, action=action)
    (ws / "shop" / "pricing.py").write_text((ws / "shop" / "pricing.py").read_text() + code)
    g = grade(sample, ws, factory)
    assert g.error is None, f"{kind}: became an infrastructure error: {g.error}"
    assert not g.resolved and g.reward["binary"] == 0.0
    if held_out:
        assert g.held_out["fault"], g.held_out
        # Nothing of phase 2 but the verdict reaches the agent.
        assert g.feedback == "Not resolved.\n\nHeld-out tests fail."
    else:
        assert "The visible test run did not finish" in g.feedback or g.guards, g.feedback


# --- phase 2 cannot reach phase 1 (local: both out dirs are host dirs, kept for the check) -----
ORDER = '''
import os as _os, time as _time
if not _os.path.exists("tests/test_pricing_hidden.py"):
    if _os.fork() == 0:  # a daemon of phase 1: it beats until phase 1's processes are ended
        _os.setsid()
        if _os.fork() == 0:
            while True:
                with open(".sdebench-out/beat", "a") as _f:
                    _f.write(repr(_time.time()) + "\\n")
                _time.sleep(0.01)
        _os._exit(0)
    _time.sleep(0.5)
else:
    with open(".sdebench-out/first", "w") as _f:
        _f.write(repr(_time.time()))
    import threading as _th
    _hog = [bytearray(64 << 20) for _ in range(4)]  # meminfo
    _stop = _time.monotonic() + 0.5
    def _spin():
        while _time.monotonic() < _stop:
            pass
    _ts = [_th.Thread(target=_spin) for _ in range(4)]  # loadavg, stat, timing
    [t.start() for t in _ts]
    [t.join() for t in _ts]
'''


@pytest.mark.bwrap
def test_phase_1_is_over_and_its_processes_gone_before_any_held_out_code_starts(sample_task, tmp_path, monkeypatch):
    sample, factory = sample_task
    ws = checkout(sample, tmp_path / "ws", sample.oracle_patch)
    (ws / "shop" / "pricing.py").write_text((ws / "shop" / "pricing.py").read_text() + ORDER)
    graded = tmp_path / "graded"
    graded.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(graded))
    g = grade(sample, ws, factory, keep_dir=True)
    assert g.error is None and g.resolved, g.feedback
    (copy,) = graded.glob("g-*")
    beats = [float(x) for x in (copy / "1" / "repo" / ".sdebench-out" / "beat").read_text().split()]
    first = float((copy / "2" / "repo" / ".sdebench-out" / "first").read_text())
    assert len(beats) > 5, "the daemon never ran"
    assert beats[-1] < g.held_out["visible_ended_at"] <= g.held_out["released_at"] < first
    time.sleep(0.3)
    assert float((copy / "1" / "repo" / ".sdebench-out" / "beat").read_text().split()[-1]) == beats[-1]


def test_a_twin_differs_only_in_the_secret(tmp_path):
    task = task_of(FAMILIES[0]) if FAMILIES else None
    if task is None:
        pytest.skip("no emitted tasks")
    twin = refacted(task, tmp_path / "twin")
    assert replace(twin, fact=task.fact, fact_tokens=task.fact_tokens, test_time_limit_s=task.test_time_limit_s,
                   path=task.path) == task
    assert twin.expected_observations().keys() == task.expected_observations().keys()
    assert twin.expected_observations() != task.expected_observations()
    assert twin.hidden_files() == task.hidden_files() and twin.observed_files() == task.observed_files()
