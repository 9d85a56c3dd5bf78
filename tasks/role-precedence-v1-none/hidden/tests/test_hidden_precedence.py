import pytest

from aclhub.policy import POLICIES, can
from aclhub.permissions.role_order import effective_role

PAIRS = [
    ('admin', 'editor', 'editor'),
    ('admin', 'moderator', 'admin'),
    ('admin', 'author', 'admin'),
    ('admin', 'viewer', 'viewer'),
    ('editor', 'moderator', 'editor'),
    ('editor', 'author', 'editor'),
    ('editor', 'viewer', 'viewer'),
    ('moderator', 'author', 'moderator'),
    ('moderator', 'viewer', 'viewer'),
    ('author', 'viewer', 'viewer'),
]


@pytest.mark.parametrize("a,b,expected", PAIRS)
def test_hidden_pairwise_precedence(a, b, expected):
    assert effective_role({a, b}) == expected


def test_hidden_all_roles():
    assert effective_role(set(POLICIES)) == 'viewer'


@pytest.mark.parametrize("a,b,expected", PAIRS)
def test_hidden_permissions_follow_precedence(a, b, expected):
    for action, allowed in POLICIES[expected].items():
        assert can([a, b], action) == allowed
