"""The command line's checks of keys in every section: the closest key by name, never a suggestion to add one
with `+`, an add refused wherever no component of the user's own reads the section, and readable filters."""

from __future__ import annotations

import re

import pytest

from sdebench.runs import sweep
from sdebench.runs.config import CONF_DIR, settings

DID = "no such config key; did you mean"


@pytest.mark.parametrize("args,expected", [
    (["select.famly=ttlcache"], f"select.famly: {DID} select.family?"),
    (["-m", "+select.famly=a,b", "source=K,H"], f"select.famly: {DID} select.family?"),
    (["~select.famly"], f"select.famly: {DID} select.family?"),
    (["+limits.max_turn=3"], f"limits.max_turn: {DID} limits.max_turns?"),
    (["+limits.new=3"], "limits.new: no such config key (keys of limits: max_cost_usd, max_turns, max_wall_s)"),
    (["+tools.bash_timeot=3"], f"tools.bash_timeot: {DID} tools.bash_timeout?"),
    (["+preflight.modle=false"], f"preflight.modle: {DID} preflight.model?"),
    (["+estimate.turn=3"], f"estimate.turn: {DID} estimate.turns?"),
    (["+grading.feedback_hiden=counts"], f"grading.feedback_hiden: {DID} grading.feedback_hidden?"),
    (["agent=llm", "+agent.max_format_error=3"], f"agent.max_format_error: {DID} agent.max_format_errors?"),
    (["agent=llm", "model=openai", "+model.temprature=0"], f"model.temprature: {DID} model.temperature?"),
    (["delivery=inject", "+delivery.token_budgt=9"], f"delivery.token_budgt: {DID} delivery.token_budget?"),
    (["+sandbox.memory_mbb=9"], f"sandbox.memory_mbb: {DID} sandbox.memory_mb?"),
    (["agent=llm", "+agent.retry.max_attemptz=1"], "agent.retry.max_attemptz: no such config key"),
    (["+select=3"], "select is already a config key: set it without +"),
])
def test_a_misspelt_key_names_the_closest_key_of_its_section(args, expected):
    with pytest.raises(sweep.UsageError) as e:
        sweep.check_overrides(args, CONF_DIR, "config")
    msg = str(e.value)
    assert msg.startswith(expected) and "\n" not in msg
    assert not re.search(r"\+\w", msg) and "append" not in msg.lower()  # never "add it with +KEY"


def test_a_stream_key_is_checked_too():
    import dataclasses

    from sdebench.runs.stream import StreamSpec

    assert tuple(f.name for f in dataclasses.fields(StreamSpec)) == sweep.STREAM_KEYS
    with pytest.raises(sweep.UsageError, match=re.escape(f"stream.cary: {DID} stream.carry?")):
        sweep.check_overrides(["+stream.cary=both"], CONF_DIR, "stream_run")
    assert sweep.check_overrides(["stream.carry=X", "stream.shuffle=true"], CONF_DIR, "stream_run")


@pytest.mark.parametrize("args", [
    ["agent.name=mylab.agents:ReActAgent", "+agent.max_steps=30", "+model.top_p=1"],  # a user's agent reads them
    ["delivery.name=mylab.memory:Summaries", "+delivery.budget=4000"],
    ["sandbox.backend=mylab.boxes:factory", "+sandbox.vm=small"],
    ["agent=mini-swe-agent", "model=openai", "+agent.env.MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=2"],  # a free-form map
    ["agent=llm", "model=openai", "+model.extra.top_p=0.9"],
])
def test_adds_a_component_reads_are_accepted(args):
    assert sweep.check_overrides(args, CONF_DIR, "config")


def test_a_filter_reads_as_typed():
    from sdebench.runs.jobs import filter_text

    cfg = {"source": "K", "select": {"family": "ttlcache,ledger", "variant": None, "ids": ["a", "b"], "tier": None}}
    assert filter_text(settings(cfg)) == "source=K select.family=ttlcache,ledger select.ids=a,b"
    assert filter_text(settings({"source": "all", "select": {}})) == "source=all"


def test_a_plan_that_matches_nothing_says_the_filter(capsys):
    from sdebench.runs import plan

    assert plan.main(["select.family=nope", "source=K"]) == 0
    out = capsys.readouterr().out
    assert "a job matches no task: source=K select.family=nope" in out and "{" not in out


def test_a_stream_with_its_own_tasks_refuses_a_filter():
    from sdebench.runs.stream import StreamError, StreamSpec, order_tasks

    spec = StreamSpec(name="rounding", tasks=("a",), shuffle=False, shuffle_seed=0, carry="both", fresh=True)
    with pytest.raises(StreamError, match="select.family would not apply"):
        order_tasks(spec, settings({"select": {"family": "ttlcache", "variant": None}, "tasks_dir": "tasks"}))
