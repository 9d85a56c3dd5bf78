import pytest
from aclhub.policy import POLICIES, can
from aclhub.permissions.role_order import effective_role
PAIRS = [('approver', 'author'), ('approver', 'commenter'), ('approver', 'editor'), ('approver', 'owner'), ('approver', 'reviewer'), ('author', 'commenter'), ('author', 'editor'), ('author', 'owner'), ('author', 'reviewer'), ('commenter', 'editor'), ('commenter', 'owner'), ('commenter', 'reviewer'), ('editor', 'owner'), ('editor', 'reviewer'), ('owner', 'reviewer')]
ACTIONS = sorted({action for rules in POLICIES.values() for action in rules})

@pytest.mark.parametrize('a,b', PAIRS)
def test_hidden_pairwise_precedence(a, b, observe):
    observe(effective_role({a, b}))

def test_hidden_all_roles(observe):
    observe(effective_role(set(POLICIES)))

@pytest.mark.parametrize('a,b', PAIRS)
def test_hidden_permissions_follow_precedence(a, b, observe):
    observe({action: can([a, b], action) for action in ACTIONS})
