"""One way to build a component: registered names, `module:Class` references, and their errors."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from sdebench import components as c
from sdebench.sandbox import SandboxError
from sdebench.sandbox.unsafe import UnsafeLocalFactory


@dataclass
class Echo:
    """A delivery of this test module, selected as `tests.test_components:Echo`."""

    note: str = "hello"


class Quiet:
    """An agent of this test module with no from_config (built with no arguments)."""

    name = "quiet"


class Configured:
    """An agent of this test module that keeps the config it was built from."""

    name = "configured"

    @classmethod
    def from_config(cls, cfg):
        agent = cls()
        agent.cfg = cfg
        return agent


def scoring(task, workspace, factory, **options):
    """A grading function of this test module."""
    return ("graded", task, workspace)


class ClassGrader:
    def __call__(self, task, workspace, factory, **options):
        return "class-graded"


def test_every_registered_name_resolves():
    for kind, registry in c.REGISTRIES.items():
        for name in registry:
            assert callable(c.resolve(kind, name)), (kind, name)


def test_module_references_build_user_components(tmp_path):
    assert isinstance(c.build_delivery({"name": "tests.test_components:Echo", "note": "x"}), Echo)
    assert c.build_delivery({"name": "tests.test_components:Echo", "note": "x"}).note == "x"
    assert isinstance(c.build_agent({"name": "tests.test_components:Quiet"}), Quiet)
    box = c.build_sandbox({"backend": "sdebench.sandbox.unsafe:UnsafeLocalFactory", "output_cap": 100})
    assert isinstance(box, UnsafeLocalFactory) and box.output_cap == 100
    assert c.grader("tests.test_components:scoring")("t", "w", None)[0] == "graded"
    assert c.grader("tests.test_components:ClassGrader")("t", "w", None) == "class-graded"


def test_an_agent_is_built_from_its_own_and_the_model_section_only():
    run_cfg = {"agent": {"name": "tests.test_components:Configured", "depth": 2}, "model": {"name": "none"},
               "source": "K", "select": {"ids": "ttlcache-v0-K"}, "tasks_dir": "/store/tasks", "results_dir": "r"}
    agent = c.build_agent(run_cfg["agent"], run_cfg["model"])
    assert agent.cfg == {"agent": run_cfg["agent"], "model": {"name": "none"}}


def test_unknown_names_and_bad_references_are_one_line_errors():
    cases = [
        (lambda: c.build_agent({"name": "smart"}), c.ComponentError,
         f"unknown agent 'smart' (choose {', '.join(c.AGENTS)}, or give package.module:Name)"),
        (lambda: c.build_agent({}), c.ComponentError, "unknown agent None"),
        (lambda: c.build_delivery({"name": "zip"}), c.ComponentError, "unknown delivery 'zip'"),
        (lambda: c.build_delivery({"name": "pkg:"}), c.ComponentError, "bad delivery reference 'pkg:': write package.module:Name"),
        (lambda: c.build_delivery({"name": "a b:C"}), c.ComponentError, "bad delivery reference"),
        (lambda: c.build_delivery({"name": "no_such_pkg_xyz.mod:C"}), c.ComponentError,
         "delivery 'no_such_pkg_xyz.mod:C': cannot import no_such_pkg_xyz.mod"),
        (lambda: c.build_delivery({"name": "tests.test_components:Nope"}), c.ComponentError,
         "tests.test_components has no attribute 'Nope'"),
        (lambda: c.build_delivery({"name": "inject", "budget": 3}), c.ComponentError, "bad options for delivery 'inject'"),
        (lambda: c.build_sandbox({"backend": "bwrap"}), SandboxError, "unknown sandbox backend 'bwrap'"),
        (lambda: c.build_sandbox({"backend": "sdebench.sandbox.unsafe:UnsafeLocalFactory", "colour": 1}), SandboxError,
         "bad options for sandbox backend"),
        (lambda: c.grader("fancy"), c.ComponentError, "unknown grader 'fancy' (choose sdebench, bugsinpy"),
    ]
    for build, error, message in cases:
        with pytest.raises(error) as e:
            build()
        assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_graders_are_looked_up_by_the_task_field(tasks_dir):
    from sdebench.grading.grade import grade_two_phase
    from sdebench.interop.bugsinpy_verifier import grade_bugsinpy
    from sdebench.tasks.record import load

    task = load(tasks_dir / "ttlcache-v0-K")
    assert c.grader_for(task) is grade_two_phase and c.grader(None) is grade_two_phase
    assert c.grader_for(replace(task, grader="bugsinpy")) is grade_bugsinpy
    assert c.grader_for(replace(task, grader="tests.test_components:scoring")) is scoring


def test_a_task_with_an_unimportable_grader_grades_to_an_error_not_a_crash(tasks_dir, tmp_path):
    from sdebench.grading.grade import grade
    from sdebench.tasks.record import load

    task = replace(load(tasks_dir / "ttlcache-v0-K"), grader="no_such_pkg_xyz.mod:grade")
    g = grade(task, tmp_path, UnsafeLocalFactory())
    assert not g.resolved and "cannot import no_such_pkg_xyz.mod" in g.error


def test_the_grader_field_accepts_registered_names_and_references(tasks_dir, tmp_path):
    import shutil

    from sdebench.tasks.record import TaskError, load

    d = tmp_path / "t"
    shutil.copytree(tasks_dir / "ttlcache-v0-K", d)
    text = (d / "task.toml").read_text()
    (d / "task.toml").write_text('grader = "tests.test_components:scoring"\n' + text)
    assert load(d).grader == "tests.test_components:scoring"
    (d / "task.toml").write_text('grader = "fancy"\n' + text)
    with pytest.raises(TaskError, match="field 'grader' must be one of sdebench, bugsinpy or package.module:Name"):
        load(d)


def test_what_reads_as_a_reference():
    assert c.is_target("a.b:C.D") and not c.is_target("a.b") and not c.is_target(":C") and not c.is_target(3)
