"""The rule that decides whether a failed run has an outcome (sdebench.agents.base.failure_stop)."""

from __future__ import annotations

import pytest

from sdebench.agents.base import STOP_AGENT_ERROR, STOP_ERROR, failure_stop, infrastructure_status


@pytest.mark.parametrize(("status", "infra"), [(None, True), (500, True), (502, True), (503, True), (429, True),
                                               (401, True), (403, True), (404, True), (408, True),
                                               (400, False), (413, False), (422, False)])
def test_which_failed_calls_are_the_infrastructures(status, infra):
    assert infrastructure_status(status) is infra


def test_only_a_failure_after_the_model_acted_without_an_infrastructure_cause_is_the_agents():
    assert failure_stop(model_acted=True, infrastructure=False) == STOP_AGENT_ERROR
    assert failure_stop(model_acted=True, infrastructure=True) == STOP_ERROR
    # before the model acted at all, nothing it did can have caused the failure: set-up, no outcome
    assert failure_stop(model_acted=False, infrastructure=False) == STOP_ERROR
    assert failure_stop(model_acted=False, infrastructure=True) == STOP_ERROR
