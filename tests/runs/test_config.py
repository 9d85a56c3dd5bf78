"""The config tree: every option of every group composes (Hydra's compose API) and builds what it
selects; every experiment dry-runs; `source` is a validated plain key; moved keys still work."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from sdebench import components
from sdebench.runs.config import ConfigError, check, settings, sources
from tests import tiers

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
TEST_IMAGE = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")
# Environment variables the shipped model entries read their keys from (placeholders here).
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SDEBENCH_TESTMODEL_KEY")
GROUPS = ("agent", "model", "delivery", "memory", "sandbox", "grading", "experiment", "stream", "hydra/launcher")


def options(group: str) -> list[str]:
    """Every option of a config group: the yaml files of its dir."""
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def compose_plain(overrides: list[str], config_name: str = "config", hydra_cfg: bool = False) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name=config_name, overrides=overrides, return_hydra_config=hydra_cfg)
    if hydra_cfg:
        return cfg
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.fixture
def keys(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.setenv(var, "sk-placeholder")


def test_the_groups_are_the_dirs_of_conf():
    dirs = {p.relative_to(CONF).as_posix() for p in CONF.rglob("*") if p.is_dir() and any(p.glob("*.yaml"))}
    assert dirs == set(GROUPS), "a new config group needs a case in this file"
    assert not (CONF / "source").exists()  # `source` is a plain key now


def _sandbox_case(name: str):
    marks = {"docker": [pytest.mark.docker], "local": [pytest.mark.bwrap]}.get(name, [])
    return pytest.param(name, marks=marks)


@pytest.mark.parametrize("name", options("agent"))
def test_every_agent_option_builds(name, keys, tmp_path):
    needs_model = {"llm", "claude-code", "codex", "mini-swe-agent", "qwen-code", "opencode", "aider",
                   "gemini-cli"}  # model-driven agents need a model
    extra = {**{n: ["model=testmodel"] for n in needs_model}, "patch": [f"agent.patch={ROOT / 'tasks' / 'ttlcache-v0-K' / 'oracle.patch'}"]}
    cfg = compose_plain([f"agent={name}", *extra.get(name, [])])
    checked = check(cfg)
    agent = components.build_agent(checked["agent"], checked["model"])
    assert agent.name == cfg["agent"]["name"] == name


@pytest.mark.parametrize("name", options("model"))
def test_every_model_option_builds_its_agent(name, keys):
    cfg = check(compose_plain([f"model={name}", "agent=llm" if name != "none" else "agent=noop"]))
    agent = components.build_agent(cfg["agent"], cfg["model"])
    if name == "none":
        assert agent.name == "noop" and cfg["model"] == {"name": "none"}
    else:
        assert agent.client.name == cfg["model"]["name"] and agent.client.model.cost_tracking == "strict"
        assert agent.client.pricing.mode in ("litellm", "configured")


@pytest.mark.parametrize("name", options("delivery"))
def test_every_delivery_option_builds(name):
    cfg = compose_plain([f"delivery={name}"])
    d = components.build_delivery(cfg["delivery"])
    assert d.name == name and callable(d.prepare)


@pytest.mark.parametrize("name", options("memory"))
def test_every_memory_option_builds_and_reaches_memtool(name):
    from sdebench.delivery.backend import MemoryBackend

    cfg = compose_plain([f"memory={name}", "delivery=memtool"])
    memory = components.build_memory(cfg["memory"])
    assert memory.name == name and isinstance(memory, MemoryBackend)  # nothing is started until it is loaded
    d = components.build_delivery(cfg["delivery"], cfg["memory"])
    assert type(d.memory) is type(memory) and components.memory_system_of(cfg["delivery"], cfg["memory"]) == name
    full = compose_plain([f"memory={name}", "delivery=full"])
    assert components.memory_system_of(full["delivery"], full["memory"]) is None


def test_an_unknown_memory_system_is_one_line():
    with pytest.raises(components.ComponentError, match=r"unknown memory system 'kgg' \(choose bm25, kg"):
        components.build_memory({"name": "kgg"})
    with pytest.raises(components.ComponentError, match="bad options for memory system 'bm25'"):
        components.build_memory({"name": "bm25", "colour": "red"})


@pytest.mark.parametrize("name", [_sandbox_case(n) for n in options("sandbox")])
def test_every_sandbox_option_builds(name, tmp_path):
    overrides = [f"sandbox={name}", f"tasks_dir={tmp_path / 'tasks'}", f"results_dir={tmp_path / 'results'}"]
    if name == "docker":
        from sdebench.sandbox.docker import unavailable_reason

        tiers.skip_unless("docker")
        reason = unavailable_reason(TEST_IMAGE)
        if reason:
            (pytest.fail if os.environ.get("SDEBENCH_REQUIRE_DOCKER") else pytest.skip)(f"docker unavailable: {reason}")
        overrides.append(f"sandbox.image={TEST_IMAGE}")
    cfg = compose_plain(overrides)
    factory = components.build_sandbox(cfg["sandbox"])
    try:
        assert factory.name == name
        (tmp_path / "ws").mkdir()
        with factory.open(tmp_path / "ws") as box:
            assert box.exec("echo ok", timeout=60).stdout == "ok\n"
    finally:
        factory.cleanup()


@pytest.mark.parametrize("name", options("grading"))
def test_every_grading_option_is_valid_grade_options(name):
    from sdebench.grading.options import GradeOptions

    cfg = compose_plain([f"grading={name}"])
    opts = GradeOptions.from_mapping(cfg["grading"])
    assert opts.feedback_hidden == cfg["grading"]["feedback_hidden"] == "binary"  # the default policy


def test_the_configs_hold_the_one_default_cap_and_feedback_policy():
    from sdebench.grading.options import DEFAULT_FEEDBACK, GradeOptions
    from sdebench.runs.record import DEFAULT_MAX_INTERVENTIONS, EpisodeRecord, Identity, Outcome
    from sdebench.runs.results import check_reference
    from sdebench.runs.rules import DEFAULT_CAP, feedback_policy

    cfg = compose_plain([])
    assert cfg["max_interventions"] == DEFAULT_MAX_INTERVENTIONS == DEFAULT_CAP
    assert check_reference.__defaults__ == (DEFAULT_MAX_INTERVENTIONS,)
    assert cfg["grading"]["feedback_hidden"] == DEFAULT_FEEDBACK == GradeOptions().feedback_hidden
    assert Outcome.__dataclass_fields__["feedback_hidden"].default == DEFAULT_FEEDBACK == feedback_policy(EpisodeRecord.start(
        Identity("t-v0-K", "t", 0, "K", "b", "full", "oracle", "none", 0)))


@pytest.mark.parametrize("policy", ["binary", "counts", "tests"])
def test_every_feedback_policy_composes(policy):
    from sdebench.grading.options import GradeOptions

    cfg = compose_plain([f"grading.feedback_hidden={policy}"])
    assert GradeOptions.from_mapping(cfg["grading"]).feedback_hidden == policy


@pytest.mark.parametrize("name", options("stream"))
def test_every_stream_option_orders_real_tasks(name):
    from sdebench.runs.stream import StreamSpec, order_tasks

    cfg = check(compose_plain([f"stream={name}", f"tasks_dir={ROOT / 'tasks'}"], config_name="stream_run"))
    spec = StreamSpec.of(cfg["stream"])
    assert [t.id for t in order_tasks(spec, settings(cfg))] == list(spec.tasks) and spec.tasks


@pytest.mark.parametrize("name", options("hydra/launcher"))
def test_every_launcher_option_names_an_importable_launcher(name):
    from hydra.utils import get_class

    cfg = compose_plain([f"hydra/launcher={name}"], hydra_cfg=True)
    assert get_class(cfg.hydra.launcher._target_).__name__.endswith("Launcher")


@pytest.mark.parametrize("name", options("experiment"))
def test_every_experiment_option_composes_with_sweep_keys_of_the_config(name):
    config_name = "stream_run" if name.startswith("stream") else "config"
    cfg = compose_plain([f"experiment={name}"], config_name=config_name, hydra_cfg=True)
    params = dict(cfg.hydra.sweeper.params)
    assert params
    plain = OmegaConf.to_container(cfg, resolve=False)
    for key in params:
        head, *rest = key.split(".")
        assert head in plain and (not rest or rest[0] in plain[head]), f"experiment={name} sweeps {key}, not in the config"


def run_cli(module: str, args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.bwrap
@pytest.mark.parametrize("name", options("experiment"))
def test_every_experiment_dry_runs(name, tmp_path):
    """Each job selects its tasks, builds the sandbox, agent, delivery and graders, prints its
    episodes and runs none (one family and variant, to keep it quick)."""
    module = "sdebench.stream" if name.startswith("stream") else "sdebench.run"
    args = ["-m", f"experiment={name}", "dry_run=true", f"tasks_dir={ROOT / 'tasks'}",
            f"results_dir={tmp_path / 'results'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    if module == "sdebench.run":
        args += ["select.family=billing-rounding", "select.variant=0"]
    else:
        args += ["agent=learner"]
    r = run_cli(module, args, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [line for line in r.stdout.splitlines() if re.match(r"\[\d+/\d+\] ", line)]
    cfg = compose_plain([f"experiment={name}"], config_name="stream_run" if module == "sdebench.stream" else "config",
                        hydra_cfg=True)
    jobs = 1
    for values in cfg.hydra.sweeper.params.values():
        jobs *= len(str(values).split(","))
    per_job = 1 if module == "sdebench.run" else len(compose_plain([], config_name="stream_run")["stream"]["tasks"])
    # a source=none job of one family still has its one task; every job prints each episode once
    assert len(lines) == jobs * per_job and all(line.endswith(": run") for line in lines), r.stdout[-2000:]
    assert not (tmp_path / "results").exists() and not list((tmp_path / "sweep").rglob("summary.md"))


def test_source_is_validated():
    assert sources("all") is None and sources() is None
    assert sources("K") == ("K",) and sources("H,none") == ("H", "none")
    assert sources(["F", "X"]) == ("F", "X")
    with pytest.raises(ConfigError, match=r"^source=Q: unknown source 'Q' \(choose H, K, F, X, none, all\)$"):
        sources("Q")
    with pytest.raises(ConfigError, match="plain value"):
        sources({"name": "K"})


def test_an_unknown_source_is_one_line_from_the_command_line(tmp_path):
    r = run_cli("sdebench.run", ["source=Q", f"tasks_dir={ROOT / 'tasks'}", f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == \
        "sdebench.run: error: source=Q: unknown source 'Q' (choose H, K, F, X, none, all)"


def test_moved_top_level_cost_tracking_still_works_with_a_warning(caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="sdebench.config"):
        cfg = check({"cost_tracking": "ignore", "model": {"name": "openai", "cost_tracking": "strict"}})
    assert cfg["model"]["cost_tracking"] == "ignore" and "cost_tracking" not in cfg
    assert caplog.messages == ["cost_tracking=ignore is deprecated: write model.cost_tracking=ignore"]
    assert check({"cost_tracking": None, "model": {"name": "none"}}) == {"model": {"name": "none"}}
    composed = compose_plain(["cost_tracking=ignore", "model=testmodel"])
    assert check(composed)["model"]["cost_tracking"] == "ignore"


def test_settings_reads_the_config_once_with_types_and_the_tree_defaults():
    from sdebench.runs import schema

    conf = settings({"agent": {"name": "oracle"}, "limits": {"max_turns": 7}, "max_interventions": 2})
    assert isinstance(conf, schema.RunConfig) and settings(conf) is conf
    # what the mapping leaves out is the YAML tree's (conf/config.yaml, conf/grading/default.yaml)
    tree = compose_plain([])
    assert conf.limits.max_turns == 7 and conf.limits.max_wall_s == tree["limits"]["max_wall_s"]
    assert conf.grading.feedback_hidden == tree["grading"]["feedback_hidden"] == "binary"
    assert conf.max_interventions == 2 and conf.tools.bash_timeout == tree["tools"]["bash_timeout"]
    assert conf.agent == {"name": "oracle"} and conf.delivery is None  # a component's section is its own
    # a composed config reads back as itself
    assert settings(tree).limits == schema.LimitsConfig(**tree["limits"])
    bad = [({"max_interventions": "many"}, "max_interventions: Value 'many' of type 'str' could not be converted to Integer"),
           ({"selct": {"family": "x"}}, "selct: Key 'selct' not in 'RunConfig'"),
           ({"limits": {"max_trns": 3}}, "limits.max_trns: Key 'max_trns' not in 'LimitsConfig'"),
           ({"claims": "fcntl"}, "claims must be one of flock, lease, got 'fcntl'"),
           ({"source": "Q"}, "source=Q: unknown source 'Q'")]
    for given, msg in bad:
        with pytest.raises(ConfigError) as e:
            settings(given)
        assert str(e.value).startswith(msg) and "\n" not in str(e.value), str(e.value)


def test_the_config_hash_of_a_composed_config_is_unchanged_by_typed_reading():
    from sdebench.runs import results

    # The hash keys every stored record: reading the config with types must not move it (these values were
    # computed from the plain mapping before the run layer read it typed).
    assert results.config_hash(compose_plain(["agent=oracle", "delivery=memtool"])) == "774f2d02e473"
    assert results.config_hash(compose_plain(["delivery=memtool", "memory=kg"])) == "85d16a81b2d6"
    assert results.config_hash(compose_plain(["agent=claude-code", "model=testmodel", "limits.max_turns=7"])) == "363c5c9a6cb7"
