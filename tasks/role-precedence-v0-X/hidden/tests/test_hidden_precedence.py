import pytest
from gatekeep.policy import POLICIES, can
from gatekeep.access.precedence import effective_role
PAIRS = [('auditor', 'contributor'), ('auditor', 'guest'), ('auditor', 'maintainer'), ('auditor', 'owner'), ('auditor', 'reporter'), ('contributor', 'guest'), ('contributor', 'maintainer'), ('contributor', 'owner'), ('contributor', 'reporter'), ('guest', 'maintainer'), ('guest', 'owner'), ('guest', 'reporter'), ('maintainer', 'owner'), ('maintainer', 'reporter'), ('owner', 'reporter')]
ACTIONS = sorted({action for rules in POLICIES.values() for action in rules})

@pytest.mark.parametrize('a,b', PAIRS)
def test_hidden_pairwise_precedence(a, b, observe):
    observe(effective_role({a, b}))

def test_hidden_all_roles(observe):
    observe(effective_role(set(POLICIES)))

@pytest.mark.parametrize('a,b', PAIRS)
def test_hidden_permissions_follow_precedence(a, b, observe):
    observe({action: can([a, b], action) for action in ACTIONS})
