"""The reset/step/state environment on a committed task and an imported BugsInPy task."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sdebench.env.environment import (
    BadAction,
    CodeFixEnv,
    EnvError,
    EpisodeDone,
    NoEpisode,
    SandboxUnavailable,
    TaskStore,
    UnknownTask,
    patch_paths,
)
from sdebench.interop import bugsinpy as bp
from sdebench.sandbox import SandboxError, make_factory
from tests.interop import bugsinpy_fixture as fx

OURS = "billing-rounding-v0-K"


@pytest.fixture(scope="module")
def store(tasks_dir, tmp_path_factory) -> TaskStore:
    """One committed task and the imported BugsInPy fixture tasks, in one tasks dir."""
    root = tmp_path_factory.mktemp("envtasks")
    shutil.copytree(tasks_dir / OURS, root / OURS)
    parquet = fx.write_parquet(root.parent / "env.parquet", fx.good_rows())
    assert bp.import_parquet(parquet, root).skipped == []
    return TaskStore(root)


@pytest.fixture
def env(store, tmp_path):
    e = CodeFixEnv(store, make_factory({"backend": "unsafe_local"}), max_steps=4, work_root=tmp_path, allow_unsafe=True)
    yield e
    e.close()


def test_reset_shows_the_files_to_fix_and_the_failing_tests(env):
    obs = env.reset(task_id=OURS)
    assert list(obs.current_code) == ["invoicer/money.py"]
    assert "ROUND_CEILING" in obs.current_code["invoicer/money.py"]
    assert obs.step_number == 0 and obs.max_steps == 4 and not obs.done
    assert "tests/test_repro_overcharge.py::test_line_is_not_overcharged" in obs.failing_tests
    assert "Held-out tests fail." in obs.failing_tests  # binary policy: one bit, no count
    assert "test_hidden" not in obs.failing_tests  # held-out tests are never named
    assert obs.info["tests_passing"] == 4 and obs.info["tests_failing"] == 2
    assert obs.info["held_out"] == {"pass": False} and obs.info["feedback_policy"] == "binary"
    assert obs.task_description.startswith("Customers report being overcharged")


def test_oracle_diff_solves_with_the_full_shaped_reward(env, store):
    env.reset(task_id=OURS)
    obs = env.step({"diff": store.get(OURS).oracle_patch})
    assert obs.done and obs.info["all_tests_pass"] and obs.info["is_valid_python"]
    assert obs.info["newly_passing"] == 5 and obs.info["regressions"] == 0
    assert obs.reward == pytest.approx((0.3 + 0.4 - 0.1 + 0.3 + 0.6) / 1.6)
    assert obs.reward_breakdown["terminal_bonus"] == 0.3
    assert "ROUND_DOWN" in obs.current_code["invoicer/money.py"]  # the task's fact
    with pytest.raises(EpisodeDone):
        env.step({"diff": store.get(OURS).oracle_patch})
    assert env.state()["done"] and env.state()["rewards"] == [obs.reward]


def test_conventional_guess_is_partial_progress(env, store):
    env.reset(task_id=OURS)
    obs = env.step({"diff": store.get(OURS).conventional_patch})
    assert not obs.done and not obs.info["all_tests_pass"]
    assert 0 < obs.info["newly_passing"] < 5 and obs.info["regressions"] == 0
    assert 0.3125 < obs.reward < 0.9375
    assert "Held-out tests fail." in obs.failing_tests and obs.info["held_out"] == {"pass": False}


def test_counts_policy_reveals_the_count_and_the_reward_follows_it(store, tmp_path):
    e = CodeFixEnv(store, make_factory({"backend": "unsafe_local"}), max_steps=4, work_root=tmp_path, allow_unsafe=True,
                   grading={"feedback_hidden": "counts"})
    e.reset(task_id=OURS)
    obs = e.step({"diff": store.get(OURS).conventional_patch})
    held = obs.info["held_out"]
    assert held["total"] == 3 and 0 < held["failed"] <= 3
    assert f"Held-out tests: {held['failed']} of 3 fail." in obs.failing_tests
    assert obs.info["newly_passing"] == 2 + 3 - held["failed"]
    e.close()


def test_step_grades_with_pristine_tests_and_a_honeypot(env, store):
    """A step cannot force its own pass: the grader restores the tests and checks its controls."""
    code = env.reset(task_id=OURS).current_code["invoicer/money.py"]
    forged = code + (
        "\n\nimport _pytest.reports as _r\n_orig = _r.TestReport.__init__\n\n\n"
        "def _init(self, *a, **k):\n    _orig(self, *a, **k)\n    self.outcome = 'passed'\n    self.longrepr = None\n\n\n"
        "_r.TestReport.__init__ = _init\n")
    obs = env.step({"path": "invoicer/money.py", "patched_code": forged})
    assert not obs.info["all_tests_pass"] and "tampering" in obs.info["guards"]


def test_invalid_python_is_not_applied_and_scores_no_more_than_an_unchanged_step(env):
    before = env.reset(task_id=OURS).current_code["invoicer/money.py"]
    obs = env.step({"patched_code": "def broken(:\n"})
    assert not obs.info["is_valid_python"] and "SyntaxError" in obs.info["error"]
    assert obs.current_code["invoicer/money.py"] == before and obs.step_number == 1
    unchanged = env.step({"patched_code": before})  # graded: the grader's unchanged guard
    assert unchanged.info["guards"] == ["unchanged"] and unchanged.info["is_valid_python"]
    # Both score as a guard does: a broken step never out-earns doing nothing.
    assert obs.reward == unchanged.reward == 0.0
    assert obs.reward_breakdown is None and unchanged.reward_breakdown is None
    assert env.state()["rewards"] == [0.0, 0.0]


def test_a_regression_is_penalised(env):
    code = env.reset(task_id=OURS).current_code["invoicer/money.py"]
    # Break to_decimal for every input: the passing suite regresses.
    obs = env.step({"path": "invoicer/money.py", "patched_code": code + "\n\ndef to_decimal(value):\n    raise ValueError\n"})
    assert obs.info["regressions"] > 0 and obs.reward_breakdown["regression_penalty"] < 0


def test_diff_that_does_not_apply_is_a_failed_step(env):
    env.reset(task_id=OURS)
    bad = "--- a/invoicer/money.py\n+++ b/invoicer/money.py\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n"
    obs = env.step({"diff": bad})
    assert not obs.info["is_valid_python"] and "does not apply" in obs.info["error"]
    assert obs.reward == 0.0


def test_max_steps_ends_the_episode(store, tmp_path):
    e = CodeFixEnv(store, make_factory({"backend": "unsafe_local"}), max_steps=1, work_root=tmp_path, allow_unsafe=True)
    code = e.reset(task_id=OURS).current_code["invoicer/money.py"]
    assert e.step({"patched_code": code}).done
    e.close()


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({}, "exactly one"),
        ({"patched_code": "x = 1\n", "diff": "x"}, "exactly one"),
        ({"patched_code": 3}, "must be a string"),
        ({"patched_code": "x = 1\n", "path": "../escape.py"}, "not a file inside the repo"),
        ({"patched_code": "x = 1\n", "path": "tests/test_invoice.py"}, "test or pytest-config"),
        ({"diff": "--- a/conftest.py\n+++ b/conftest.py\n"}, "test or pytest-config"),
        ({"patch": "x"}, "unknown action field"),
        ("not an object", "an action is an object"),
    ],
)
def test_bad_actions_are_refused_without_a_step(env, action, message):
    env.reset(task_id=OURS)
    with pytest.raises(BadAction, match=message):
        env.step(action)
    assert env.state()["step_number"] == 0


def test_step_and_state_before_reset(env):
    with pytest.raises(NoEpisode):
        env.step({"patched_code": "x"})
    with pytest.raises(NoEpisode):
        env.state()


def test_unknown_task(env):
    with pytest.raises(UnknownTask, match="unknown task 'nope'"):
        env.reset(task_id="nope")


def test_seed_picks_a_task_deterministically(env, store):
    assert env.reset(seed=1).task_id == store.ids()[1]
    assert env.reset(seed=1 + len(store.ids())).task_id == store.ids()[1]


def test_imported_bugsinpy_task(env):
    obs = env.reset(task_id="bugsinpy-0001")
    assert list(obs.current_code) == ["solution.py"] and obs.current_code["solution.py"] == fx.BUGGY_ADD
    assert "Held-out tests fail." in obs.failing_tests and "test_add" not in obs.failing_tests
    obs = env.step({"patched_code": fx.FIXED_ADD})
    assert obs.done and obs.info["all_tests_pass"] and obs.info["newly_passing"] == 3


def test_imported_task_whose_starter_fails_to_import(env):
    obs = env.reset(task_id="bugsinpy-0002")
    assert "Held-out tests fail." in obs.failing_tests and obs.info["tests_passing"] == 0
    # Touching the file without fixing the import: the import guard says why.
    obs = env.step({"patched_code": fx.BUGGY_IMPORT + "\n"})
    assert "solution fails to import" in obs.failing_tests and obs.info["guards"] == ["import:solution"]
    obs = env.step({"patched_code": fx.FIXED_IMPORT})
    assert obs.info["all_tests_pass"] and obs.info["newly_passing"] == 1


def test_state_tracks_the_episode(env):
    env.reset(task_id="bugsinpy-0001", seed=7)
    env.step({"patched_code": fx.BUGGY_ADD.replace("a - b", "a * b")})
    st = env.state()
    assert st["task_id"] == "bugsinpy-0001" and st["seed"] == 7 and st["step_number"] == 1
    assert len(st["rewards"]) == 1 and not st["done"]


def test_patch_paths():
    assert patch_paths("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n") == ["x.py"]
    assert patch_paths("--- /dev/null\n+++ b/new/y.py\n") == ["new/y.py"]


def test_reset_cleans_the_previous_episode(env, tmp_path: Path):
    env.reset(task_id="bugsinpy-0001")
    first = env.episode.workdir
    env.reset(task_id="bugsinpy-0001")
    assert not first.exists() and env.episode.workdir.exists()


@pytest.mark.bwrap
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_episode_under_bubblewrap(store, tmp_path):
    e = CodeFixEnv(store, max_steps=3, work_root=tmp_path)  # the default sandbox: local, the store masked
    assert e.factory.name == "local" and str(store.tasks_dir.resolve()) in e.factory.options.masked
    obs = e.reset(task_id=OURS)
    assert obs.info["tests_failing"] == 2
    obs = e.step({"diff": store.get(OURS).oracle_patch})
    assert obs.done and obs.info["all_tests_pass"]
    e.close()


def test_an_unsafe_sandbox_is_refused_unless_named(store, tmp_path):
    unsafe = make_factory({"backend": "unsafe_local"})
    with pytest.raises(EnvError, match=r"^sandbox unsafe_local runs graded code unisolated .*allow_unsafe=True") as e:
        CodeFixEnv(store, unsafe, work_root=tmp_path)
    assert "\n" not in str(e.value)
    assert CodeFixEnv(store, unsafe, work_root=tmp_path, allow_unsafe=True).factory is unsafe
    from sdebench.env.server import create_app

    with pytest.raises(EnvError, match="allow_unsafe=True"):
        create_app(store.tasks_dir, unsafe)
    assert create_app(store.tasks_dir, unsafe, allow_unsafe=True) is not None


class FailingFactory:
    """A sandbox backend whose engine is down (failure injection at the factory seam)."""

    name = "failing"

    def __init__(self, fail: bool = True):
        self.fail = fail
        self.inner = make_factory({"backend": "unsafe_local"})

    def open(self, workspace, read_only=False):
        if self.fail:
            raise SandboxError("engine unreachable")
        return self.inner.open(workspace, read_only)

    def cleanup(self):
        pass


def test_a_sandbox_failure_does_not_count_as_a_step(store, tmp_path):
    factory = FailingFactory(fail=False)
    e = CodeFixEnv(store, factory, work_root=tmp_path)
    obs = e.reset(task_id="bugsinpy-0001")
    factory.fail = True
    with pytest.raises(SandboxUnavailable, match="engine unreachable"):
        e.step({"patched_code": fx.FIXED_ADD})
    assert e.state()["step_number"] == 0 and e.state()["rewards"] == []
    assert (e.episode.repo / "solution.py").read_text() == fx.BUGGY_ADD  # the edit was undone
    factory.fail = False
    assert e.step({"patched_code": "x = 1\n"}).current_code == {"solution.py": "x = 1\n"}
    assert obs.current_code["solution.py"] == fx.BUGGY_ADD
    e.close()
