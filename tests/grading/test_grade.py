import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from sdebench.grading.grade import HELD_OUT_FAIL, grade, pristine_tree
from sdebench.grading.rules import is_protected, is_source, is_test_path
from sdebench.sandbox import make_factory
from sdebench.tasks import record as task_mod
from sdebench.testing.sample_task import checkout, write_sample_task
from tests.sandbox.conftest import docker_image  # noqa: F401 - fixture

REPO_ROOT = Path(__file__).resolve().parents[2]
TASKS_DIR = REPO_ROOT / "tasks"

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_sample_task(tmp_path_factory.mktemp("store") / "sample")


@pytest.fixture(scope="module")
def factory(sample):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return make_factory({"backend": "local", "tasks_dir": str(sample.path.parent)})


def _ws(task, tmp_path, patch=""):
    return checkout(task, tmp_path / "ws", patch)


def _edit(ws: Path, rel: str, old: str, new: str) -> None:
    p = ws / rel
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new))


# --- path classes ----------------------------------------------------------------------
def test_path_classes():
    declared = frozenset({"checks/spec_rules.py"})
    assert is_test_path("tests/helpers/data.json")
    assert is_test_path("pkg/test_x.py") and is_test_path("pkg/x_test.py")
    assert is_test_path("checks/spec_rules.py", declared)
    assert not is_test_path("pkg/testing.py")
    for cfg in ("pytest.ini", "sub/tox.ini", "setup.cfg", "pyproject.toml", "pkg/conftest.py", ".pytest.ini"):
        assert is_protected(cfg)
    assert is_source("pkg/rates.json") and is_source("pkg/m.py")
    assert not is_source("docs/adr.md") and not is_source(".agent/preferences.md")


def test_pristine_tree_is_cached_per_bundle_content(sample, tmp_path):
    a = pristine_tree(sample)
    assert pristine_tree(sample) is a
    assert a.head_sha == sample.head_sha
    assert dict(a.files)["shop/cart.py"].startswith(b'"""Carts."""')
    copy = write_sample_task(tmp_path / "copy")
    assert pristine_tree(copy) is a  # same bytes, same tree


# --- outcomes ----------------------------------------------------------------------------
@needs_bwrap
def test_oracle_resolves(sample, factory, tmp_path):
    g = grade(sample, _ws(sample, tmp_path, sample.oracle_patch), factory)
    assert g.resolved and not g.guards and g.error is None, g.feedback
    assert g.counts == {
        "FAIL_TO_PASS": {"passed": 1, "total": 1},
        "PASS_TO_PASS": {"passed": 2, "total": 2},
        "HIDDEN_TO_PASS": {"passed": 2, "total": 2},
    }
    assert g.pass_ratio == 1.0
    assert g.reward["binary"] == 1.0 and g.reward["shaped"] == pytest.approx(0.9375)
    assert g.feedback == "Resolved: every graded test passes."
    json.dumps(g.to_dict())


@needs_bwrap
def test_unchanged_source_scores_zero_without_running(sample, factory, tmp_path):
    ws = _ws(sample, tmp_path)
    (ws / "docs" / "pricing.md").write_text("edited docs only\n")
    (ws / "tests" / "test_pricing.py").write_text("def test_members_get_a_discount():\n    pass\n")
    g = grade(sample, ws, factory)
    assert not g.resolved and g.guards == ["unchanged"]
    assert g.reward == {"binary": 0.0, "pass_ratio": 0.0, "shaped": 0.0, "shaped_breakdown": None}
    assert all(t.outcome == "missing" for t in g.tests)
    assert all("not run" in t.message for t in g.tests if t.group != "HIDDEN_TO_PASS")
    assert "No source change" in g.feedback


@needs_bwrap
def test_conventional_fix_fails_hidden_tests_and_feedback_hides_them(sample, factory, tmp_path):
    g = grade(sample, _ws(sample, tmp_path, sample.conventional_patch), factory)
    assert not g.resolved and not g.guards and g.error is None
    assert g.counts["FAIL_TO_PASS"]["passed"] == 1 and g.counts["HIDDEN_TO_PASS"] == {"passed": 0, "total": 2}
    assert g.pass_ratio == pytest.approx(0.6)
    hidden = [t for t in g.tests if t.group == "HIDDEN_TO_PASS"]
    # Phase 2 text never leaves the host: hidden outcomes carry no message at all.
    assert all(t.outcome == "failed" and t.message == "" for t in hidden)
    assert g.feedback_policy == "binary" and HELD_OUT_FAIL in g.feedback and "2" not in g.feedback
    for leak in ("test_member_rate_exact", "test_pricing_hidden", "93.0", "232.5", "7%"):
        assert leak not in g.feedback
        assert leak not in json.dumps(g.public())
    b = g.reward["shaped_breakdown"]
    assert b["progress_reward"] == pytest.approx(0.4 / 3, abs=1e-6) and b["terminal_bonus"] == 0.0


@needs_bwrap
@pytest.mark.parametrize("policy", ["binary", "counts", "tests"])
def test_each_feedback_policy_reveals_only_what_it_says(policy, sample, factory, tmp_path):
    ws = _ws(sample, tmp_path, sample.conventional_patch)
    # One of the two held-out tests made to pass: the policies differ in what they say about it.
    _edit(ws, "shop/pricing.py", "return round(total * (1 - MEMBER_RATE), 2)",
          "return 93.0 if total == 100.0 else round(total * (1 - MEMBER_RATE), 2)")
    g = grade(sample, ws, factory, feedback_hidden=policy)
    assert not g.resolved and g.feedback_policy == policy
    assert g.counts["HIDDEN_TO_PASS"] == {"passed": 1, "total": 2}
    view = g.public()["held_out"]
    if policy == "binary":
        assert view == {"pass": False}
        assert HELD_OUT_FAIL in g.feedback and "of 2" not in g.feedback
        assert g.reward["shaped_breakdown"]["progress_reward"] == pytest.approx(0.4 / 3, abs=1e-6)
    if policy in ("counts", "tests"):
        assert view["failed"] == 1 and view["total"] == 2
        assert "Held-out tests: 1 of 2 fail." in g.feedback
        assert g.reward["shaped_breakdown"]["progress_reward"] == pytest.approx(0.4 * 2 / 3, abs=1e-6)
    named = "tests/test_pricing_hidden.py::test_member_rate_other_total" in g.feedback
    assert named == (policy == "tests")


@needs_bwrap
def test_an_unknown_policy_is_an_error_grade(sample, factory, tmp_path):
    g = grade(sample, _ws(sample, tmp_path, sample.oracle_patch), factory, feedback_hidden="everything")
    assert not g.resolved and "feedback_hidden" in g.error


@needs_bwrap
def test_regression_feedback_shows_the_visible_assertion(sample, factory, tmp_path):
    ws = _ws(sample, tmp_path, sample.oracle_patch)
    _edit(ws, "shop/cart.py", "price * qty", "price")
    g = grade(sample, ws, factory)
    assert not g.resolved
    assert g.counts["PASS_TO_PASS"]["passed"] == 1
    assert "tests/test_cart.py::test_total: failed" in g.feedback
    assert "assert 13.5 == 18.0" in g.feedback
    assert g.reward["shaped_breakdown"]["regression_penalty"] == -0.5


@needs_bwrap
def test_compile_guard(sample, factory, tmp_path):
    ws = _ws(sample, tmp_path, sample.oracle_patch)
    (ws / "shop" / "extra.py").write_text("def broken(:\n")
    g = grade(sample, ws, factory)
    assert g.guards == ["compile:shop/extra.py"] and not g.resolved
    assert g.reward["shaped"] == 0.0
    assert "shop/extra.py does not compile: SyntaxError" in g.feedback


@needs_bwrap
def test_import_guard(sample, factory, tmp_path):
    ws = _ws(sample, tmp_path, sample.oracle_patch)
    (ws / "shop" / "pricing.py").write_text((ws / "shop" / "pricing.py").read_text() + "\nimport no_such_module\n")
    g = grade(sample, ws, factory)
    assert "import:shop.pricing" in g.guards and not g.resolved
    assert "No module named 'no_such_module'" in g.feedback
    assert g.reward["binary"] == 0.0 and g.reward["shaped"] == 0.0


@needs_bwrap
def test_the_grader_never_raises(sample, factory, tmp_path):
    g = grade(sample, tmp_path / "missing", factory)
    assert not g.resolved and "not a directory" in g.error
    g = grade(sample, _ws(sample, tmp_path), factory, colour="red")
    assert "unknown grade option" in g.error
    broken = replace(sample, path=tmp_path / "nowhere")
    g = grade(broken, tmp_path / "ws", factory)
    assert not g.resolved and g.error
    wrong_head = replace(sample, head_sha="0" * 40)
    g = grade(wrong_head, tmp_path / "ws", factory)
    assert "does not match task.toml head_sha" in g.error
    bad_bundle_dir = tmp_path / "bad"
    shutil.copytree(sample.path, bad_bundle_dir)
    (bad_bundle_dir / "repo.bundle").write_bytes(b"not a bundle")
    g = grade(replace(sample, path=bad_bundle_dir), tmp_path / "ws", factory)
    assert not g.resolved and g.error and g.duration_s >= 0


# --- the emitted benchmark -----------------------------------------------------------------
def _emitted():
    if not TASKS_DIR.is_dir():
        return []
    return task_mod.discover(TASKS_DIR)


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("task_dir", _emitted(), ids=lambda p: p.name)
def test_every_emitted_task_grades_as_designed(task_dir, tmp_path):
    task = task_mod.load(task_dir)
    factory = make_factory({"backend": "local", "tasks_dir": str(TASKS_DIR)})
    oracle = grade(task, checkout(task, tmp_path / "oracle", task.oracle_patch), factory)
    assert oracle.resolved, oracle.feedback + str(oracle.error)
    conventional = grade(task, checkout(task, tmp_path / "conv", task.conventional_patch), factory)
    assert not conventional.resolved and conventional.counts["FAIL_TO_PASS"]["passed"] == len(task.tests.fail_to_pass)
    assert conventional.counts["HIDDEN_TO_PASS"]["passed"] < len(task.tests.hidden_to_pass)
    unchanged = grade(task, checkout(task, tmp_path / "head"), factory)
    assert not unchanged.resolved and unchanged.guards == ["unchanged"]


@pytest.mark.slow
@pytest.mark.docker
def test_an_emitted_task_grades_as_designed_on_docker(request, sample, tmp_path):
    image = request.getfixturevalue("docker_image")
    found = _emitted()
    task = task_mod.load(found[0]) if found else sample
    factory = make_factory({"backend": "docker", "image": image})
    try:
        oracle = grade(task, checkout(task, tmp_path / "oracle", task.oracle_patch), factory)
        assert oracle.resolved, oracle.feedback + str(oracle.error)
        conventional = grade(task, checkout(task, tmp_path / "conv", task.conventional_patch), factory)
        assert not conventional.resolved and conventional.counts["HIDDEN_TO_PASS"]["passed"] < len(
            task.tests.hidden_to_pass
        )
    finally:
        factory.cleanup()


# --- nothing secret shapes what the agent sees ---------------------------------------------
@needs_bwrap
def test_feedback_is_the_same_for_a_task_and_its_twin_that_differs_only_in_the_secret(sample, factory, tmp_path):
    from tests.grading.hostile.probes import CANDIDATE_MARK, candidates, probe_attack, received, refacted

    twin = refacted(sample, tmp_path / "twin")
    assert twin.fact_tokens != sample.fact_tokens and twin.expected_observations() != sample.expected_observations()
    ws = _ws(sample, tmp_path)
    cands = candidates(sample, twin)
    probe_attack(ws, cands, lines=False)
    a, b = grade(sample, ws, factory), grade(twin, ws, factory)
    assert a.error is None and b.error is None and not a.resolved and not b.resolved
    assert a.feedback == b.feedback and json.dumps(a.public()) == json.dumps(b.public())
    # Every candidate reached the feedback as it was printed, the fact's own tokens too.
    assert f"{CANDIDATE_MARK} " + " | ".join(cands) in a.feedback and "[redacted]" not in a.feedback.lower()
    for tok in sample.fact_tokens:
        assert f"removed added test or config file tests/test_{tok}.py" in a.feedback
    assert received(a.feedback) and all(not any(r.values()) for r in received(a.feedback))


@needs_bwrap
def test_what_the_visible_phase_enforces_and_says_does_not_come_from_the_task(sample, factory, tmp_path, monkeypatch):
    # The task's per-test limit is measured on its oracle: phase 1 must use a fixed one.
    from sdebench.grading import options

    monkeypatch.setattr(options, "VISIBLE_TEST_LIMIT_S", 2.0)
    quick = replace(sample, test_time_limit_s=1.0)
    slow = replace(sample, test_time_limit_s=60.0)
    ws = _ws(sample, tmp_path, sample.conventional_patch)
    # Spins in the visible phase only (the held-out one has the hidden test file).
    _edit(ws, "shop/cart.py", '    """Sum of price x quantity."""', '    """Sum of price x quantity."""\n'
          '    import os\n    while not os.path.exists("tests/test_pricing_hidden.py"):\n        pass')
    a, b = grade(quick, ws, factory, test_time_floor_s=1), grade(slow, ws, factory, test_time_floor_s=1)
    assert a.error is None and b.error is None
    assert "exceeded the per-test time limit of 2s" in a.feedback
    assert a.feedback == b.feedback


# --- error or outcome: where the failure comes from ---------------------------------------
@needs_bwrap
def test_a_failure_after_submitted_code_ran_is_an_outcome_with_the_phase_1_feedback(sample, factory, tmp_path,
                                                                                      monkeypatch):
    from sdebench.grading import grade as grade_mod

    ws = _ws(sample, tmp_path, sample.conventional_patch)
    plain = grade(sample, ws, factory)

    def broken(*a, **k):
        raise RecursionError("comparing a hostile observation")

    monkeypatch.setattr(grade_mod, "_judge", broken)
    g = grade(sample, ws, factory)
    assert g.error is None and not g.resolved and "RecursionError" in g.held_out["grader_fault"]
    assert g.feedback == plain.feedback == "Not resolved.\n\nHeld-out tests fail."
    assert "RecursionError" not in json.dumps(g.public())
    assert g.public()["held_out"] == {"pass": False}


@needs_bwrap
def test_a_failure_reading_the_submission_is_an_outcome_but_a_full_host_disk_is_an_error(sample, factory, tmp_path,
                                                                                          monkeypatch):
    import errno

    from sdebench.grading import grade as grade_mod
    from sdebench.grading import rules

    ws = _ws(sample, tmp_path, sample.oracle_patch)

    def hostile(*a, **k):
        raise ValueError("a file name nobody expected")

    monkeypatch.setattr(rules, "prepare_copy", hostile)
    g = grade(sample, ws, factory)
    assert g.error is None and not g.resolved and grade_mod.STOPPED in g.feedback
    assert "file name nobody expected" in g.held_out["grader_fault"] and "nobody" not in g.feedback

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rules, "prepare_copy", full)
    g = grade(sample, ws, factory)
    assert g.error and "No space left" in g.error

    def broken_task(*a, **k):
        raise RuntimeError("the bundle cannot be read")

    monkeypatch.setattr(grade_mod, "pristine_tree", broken_task)
    g = grade(sample, ws, factory)
    assert g.error and "bundle cannot be read" in g.error


@needs_bwrap
def test_a_held_out_phase_that_cannot_be_let_through_is_an_outcome(sample, factory, tmp_path, monkeypatch):
    from sdebench.grading import testrun
    from sdebench.sandbox.base import SandboxError

    def refuse(self, sandbox):
        raise SandboxError("the engine went away")

    monkeypatch.setattr(testrun.Gate, "open", refuse)
    g = grade(sample, _ws(sample, tmp_path, sample.oracle_patch), factory)
    # Phase 1 ran submitted code: phase 2's failure may be its doing, an outcome.
    assert g.error is None and not g.resolved and "engine went away" in g.held_out["fault"]
    assert g.feedback == "Not resolved.\n\nHeld-out tests fail."


@needs_bwrap
@pytest.mark.parametrize("alone", ["starts", "fails"])
def test_a_held_out_runner_that_did_not_start_beside_phase_1_is_tried_alone(alone, sample, factory, tmp_path,
                                                                          monkeypatch):
    from sdebench.grading import grade as grade_mod
    from sdebench.grading.testrun import TestRun

    real = grade_mod.run_tests

    def starved(box, paths, modules=(), timeout=60.0, *, gate=None, **kw):
        # Phase 2's runner "did not start" while phase 1 ran (as if starved by it); alone, as asked.
        if kw.get("mode") == "observe" and (gate is not None or alone == "fails"):
            if gate is not None:
                gate.ready.set()
            return TestRun(error="the test runner did not start within its time")
        return real(box, paths, modules, timeout, gate=gate, **kw)

    monkeypatch.setattr(grade_mod, "run_tests", starved)
    g = grade(sample, _ws(sample, tmp_path, sample.oracle_patch), factory)
    if alone == "starts":
        assert g.error is None and g.resolved and g.held_out["held_out_restarted"], g.feedback
    else:
        # Alone, with nothing of phase 1 running or left, the failure is not the submission's.
        assert g.error and "held-out phase: the test runner did not start" in g.error
