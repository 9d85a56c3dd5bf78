"""The rule that decides whether a failed run has an outcome (sdebench.agents.base.failure_stop)."""

from __future__ import annotations

from sdebench.agents.base import STOP_AGENT_ERROR, STOP_ERROR, failure_stop


def test_only_a_failure_after_the_model_acted_without_an_infrastructure_cause_is_the_agents():
    assert failure_stop(model_acted=True, infrastructure=False) == STOP_AGENT_ERROR
    assert failure_stop(model_acted=True, infrastructure=True) == STOP_ERROR
    # before the model acted at all, nothing it did can have caused the failure: set-up, no outcome
    assert failure_stop(model_acted=False, infrastructure=False) == STOP_ERROR
    assert failure_stop(model_acted=False, infrastructure=True) == STOP_ERROR
