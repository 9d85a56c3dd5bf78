import pytest

from gatekeep.policy import POLICIES, can
from gatekeep.access.precedence import effective_role

PAIRS = [
    ('owner', 'maintainer', 'maintainer'),
    ('owner', 'auditor', 'auditor'),
    ('owner', 'contributor', 'contributor'),
    ('owner', 'guest', 'guest'),
    ('maintainer', 'auditor', 'maintainer'),
    ('maintainer', 'contributor', 'maintainer'),
    ('maintainer', 'guest', 'maintainer'),
    ('auditor', 'contributor', 'contributor'),
    ('auditor', 'guest', 'guest'),
    ('contributor', 'guest', 'contributor'),
]


@pytest.mark.parametrize("a,b,expected", PAIRS)
def test_hidden_pairwise_precedence(a, b, expected):
    assert effective_role({a, b}) == expected


def test_hidden_all_roles():
    assert effective_role(set(POLICIES)) == 'maintainer'


@pytest.mark.parametrize("a,b,expected", PAIRS)
def test_hidden_permissions_follow_precedence(a, b, expected):
    for action, allowed in POLICIES[expected].items():
        assert can([a, b], action) == allowed
