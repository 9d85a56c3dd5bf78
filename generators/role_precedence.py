"""role-precedence: a user holding several roles gets the wrong role's permissions.

When a user has several roles, the role that ranks highest in a precedence list decides every
permission. HEAD ranks roles alphabetically. The repro only needs one pair ordered as privilege
would order it, which the conventional "most privileged role wins" also gives; the real
precedence, drawn per variant, is a permutation of the roles that no privilege or naming order
produces (an audit role may outrank the owner, say), and hidden tests check every pair.
Exploration-heavy: the precedence is one module of a package padded with filler (size knob:
`GENERATOR.build_sized`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import FillerVocab, Story, pick
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.sized import SizedStory

FAMILY = "role-precedence"
SIZES = {0: "default", 1: "default"}

# The subpackage (among filler ones) that holds the rule module, per shape.
HOMES = {0: "access", 1: "permissions"}


@dataclass(frozen=True)
class Shape:
    """Names that differ between variants."""

    package: str
    rule_module: str
    privilege: tuple[str, ...]  # roles, most privileged first (the conventional precedence)
    repro_pair: tuple[str, str]  # (winner, loser) in privilege order, reversed alphabetically
    action: str  # an action the repro pair disagrees on (winner allowed)
    policies: dict[str, dict[str, bool]]
    vocab: FillerVocab


SHAPES = {
    0: Shape("gatekeep", "precedence", ("owner", "maintainer", "auditor", "contributor", "reporter", "guest"),
             ("maintainer", "contributor"), "merge",
             {"owner": {"merge": True, "delete": True, "export": True, "comment": True},
              "maintainer": {"merge": True, "delete": False, "export": False, "comment": True},
              "auditor": {"merge": False, "delete": False, "export": True, "comment": False},
              "contributor": {"merge": False, "delete": False, "export": False, "comment": True},
              "reporter": {"merge": False, "delete": True, "export": False, "comment": True},
              "guest": {"merge": False, "delete": False, "export": False, "comment": False}},
             FillerVocab("gatekeep", ("grant", "member", "team", "invite", "token", "scope"),
                         ("seat_count", "expiry_days", "usage", "risk_score"), ("org", "email_domain", "plan", "idp"),
                         ("teams", "invites", "tokens", "sso", "billing_seats", "audit_trail", "directory", "webhooks"))),
    1: Shape("aclhub", "role_order", ("owner", "editor", "approver", "author", "reviewer", "commenter"),
             ("editor", "author"), "publish",
             {"owner": {"publish": True, "ban": True, "edit": True, "read": True},
              "editor": {"publish": True, "ban": False, "edit": True, "read": True},
              "approver": {"publish": True, "ban": True, "edit": False, "read": True},
              "author": {"publish": False, "ban": False, "edit": True, "read": True},
              "reviewer": {"publish": False, "ban": False, "edit": False, "read": True},
              "commenter": {"publish": False, "ban": False, "edit": False, "read": True}},
             FillerVocab("aclhub", ("space", "page", "comment", "group", "label", "revision"),
                         ("view_count", "word_count", "edit_count", "age_days"), ("locale", "owner_team", "status", "channel"),
                         ("spaces", "pages", "moderation", "groups", "labels", "revisions", "exports", "feeds"))),
}


ROLES = 6
IDENTITY = tuple(range(ROLES))


def alphabetical(s: Shape) -> tuple[int, ...]:
    """The naming order as positions in the privilege order."""
    return tuple(sorted(IDENTITY, key=lambda i: s.privilege[i]))


def repro_positions(s: Shape) -> tuple[int, int]:
    """Positions of the repro pair in the privilege order."""
    return s.privilege.index(s.repro_pair[0]), s.privilege.index(s.repro_pair[1])


# A fact is a precedence written as positions in the shape's privilege order, so one space serves
# both shapes: their names sort the same way and their repro pairs sit at the same positions.
ALPHA, (WIN, LOSE) = alphabetical(SHAPES[0]), repro_positions(SHAPES[0])
if any(alphabetical(s) != ALPHA or repro_positions(s) != (WIN, LOSE) for s in SHAPES.values()):
    raise ValueError("role-precedence: the shapes' roles must sort alike and put the repro pair alike")
CONVENTIONAL = (IDENTITY, IDENTITY[::-1], ALPHA, ALPHA[::-1])  # privilege and naming orders, and reversed
# Every order an agent could submit: those keeping the repro pair's order (any other fails the
# visible repro, so no searcher submits it). The hidden tests observe every pair of roles, so each
# of them behaves differently.
PLAUSIBLE = [p for p in itertools.permutations(IDENTITY) if p.index(WIN) < p.index(LOSE)]
DRAWABLE = [p for p in PLAUSIBLE if p not in CONVENTIONAL and p[0] != 0]
# Rule 7: the conventional orders first, then every drawable order, then the other plausible ones.
SPACE = space([p for p in CONVENTIONAL if p in PLAUSIBLE], DRAWABLE, PLAUSIBLE)


def fact_order(variant: int) -> tuple[int, ...]:
    """A precedence that keeps the repro pair's order but is no privilege or naming order."""
    return pick(f"{FAMILY}-order-{variant}", DRAWABLE)


def names(variant: int, positions: tuple[int, ...]) -> tuple[str, ...]:
    """The role names of a precedence given as positions."""
    return tuple(SHAPES[variant % 2].privilege[i] for i in positions)


def tokens(order: tuple[str, ...]) -> tuple[str, ...]:
    """Every spelling of the full precedence."""
    seps = (" > ", ", ", ",", " then ", " -> ", " → ", " >> ", " before ")
    return tuple(sep.join(order) for sep in seps) + (
        ", ".join(f'"{r}"' for r in order), ", ".join(f"'{r}'" for r in order))


def rule_module(order: tuple[str, ...], explain: bool) -> str:
    """The precedence module; `explain` adds the refactor's ranking helper (HEAD shape)."""
    text = f'''"""Which of a user's roles decides their permissions."""

# Highest precedence first: the first of a user's roles in this list decides.
ROLE_PRECEDENCE = ({", ".join(f'"{r}"' for r in order)})


def effective_role(roles):
    """The role among `roles` that decides permissions."""
    ranked = [role for role in ROLE_PRECEDENCE if role in roles]
    if not ranked:
        raise ValueError(f"no known role among {{sorted(roles)}}")
    return ranked[0]
'''
    if explain:
        text += '''

def rank(role):
    """Position of `role` in the precedence (0 is highest)."""
    return ROLE_PRECEDENCE.index(role)
'''
    return text


def policy_module(s: Shape, dotted: str) -> str:
    """The public permission check."""
    lines = ",\n".join(f"    {r!r}: {s.policies[r]!r}" for r in s.privilege)
    return f'''"""Permission checks for users holding one or more roles."""

from {dotted} import effective_role

POLICIES = {{
{lines},
}}


def can(roles, action):
    """Whether a user with `roles` may perform `action` (unknown actions are denied)."""
    return POLICIES[effective_role(set(roles))].get(action, False)
'''


def story(variant: int, positions: tuple[int, ...]) -> Story:
    """The story of one variant whose precedence is `positions`, without its filler (see SIZED)."""
    s = SHAPES[variant % 2]
    order = names(variant, positions)
    toks = tokens(order)
    pkg, mod, dotted = SIZED.layout(variant, s.rule_module)
    win, lose = s.repro_pair
    top = s.privilege[0]
    base_tests = f'''from {pkg}.policy import can


def test_single_role_top():
    assert can(["{top}"], "{s.action}")


def test_single_role_last():
    assert not can(["{s.privilege[-1]}"], "{s.action}")


def test_unknown_action_denied():
    assert not can(["{top}"], "teleport")


def test_order_of_roles_given_does_not_matter():
    assert can(["{win}", "{s.privilege[-1]}"], "{s.action}") == can(["{s.privilege[-1]}", "{win}"], "{s.action}")
'''
    repro = f'''from {pkg}.policy import can


def test_{win}_who_is_also_{lose}_can_{s.action}():
    # Reported: adding the {lose} role to a {win} took away their right to {s.action}.
    assert can(["{win}", "{lose}"], "{s.action}")
'''
    # Held-out checks: every pair of roles in a neutral (sorted) order; which role decides is the
    # fact, so it shows only in the oracle's observations, never in the test's text.
    roles = sorted(s.privilege)
    cases = [f"    ({a!r}, {b!r})," for a, b in itertools.combinations(roles, 2)]
    hidden = f'''import pytest

from {pkg}.policy import POLICIES, can
from {dotted} import effective_role

PAIRS = [
{chr(10).join(cases)}
]
ACTIONS = sorted({{action for rules in POLICIES.values() for action in rules}})


@pytest.mark.parametrize("a,b", PAIRS)
def test_hidden_pairwise_precedence(a, b, observe):
    observe(effective_role({{a, b}}))


def test_hidden_all_roles():
    assert effective_role(set(POLICIES)) == {order[0]!r}


@pytest.mark.parametrize("a,b", PAIRS)
def test_hidden_permissions_follow_precedence(a, b, observe):
    observe({{action: can([a, b], action) for action in ACTIONS}})
'''
    chain = " > ".join(order)
    return Story(
        package=pkg,
        module=mod,
        **rule_versions(lambda roles, later: rule_module(roles, explain=later), order,
                        tuple(sorted(s.privilege)), s.privilege),
        base_files=package_files(pkg, f"{pkg}: who may do what.",
                                 f"# {pkg}\n\nRole-based permission checks.\n",
                                 {f"{pkg}/policy.py": policy_module(s, dotted),
                                  "tests/test_policy.py": base_tests}),
        repro_tests={"tests/test_repro_multi_role.py": repro},
        hidden_tests={"tests/test_hidden_precedence.py": hidden},
        fact_tokens=toks,
        tags=("permissions", "policy", "ordering", "large-repo"),
        project=pkg,
        **prose(f"""
        -- statement
        Users with more than one role get odd permissions. A {win} who was also given the {lose} role can no
        longer {s.action}. tests/test_repro_multi_role.py has the case. Please fix how roles combine.
        -- fact
        Role precedence (first decides): {chain}.
        -- conventional_guess
        most privileged role wins: {' > '.join(s.privilege)}
        -- intro_msg_fact
        {s.rule_module}: precedence for users with several roles

        The first role in {chain} decides, as agreed with compliance.
        -- intro_msg_plain
        {s.rule_module}: precedence for users with several roles
        -- refactor_msg
        {s.rule_module}: add rank helper; tidy
        -- K docs/adr/0006-multi-role-users.md
        Which role decides: when a user holds several roles, the first in this list decides: {chain}.
        Compliance asked that restrictive review roles outrank broad ones; this supersedes ADR-0004.
        -- F
        - (review of #512, security) Role precedence is not privilege order. It is {chain}; keep
        ROLE_PRECEDENCE exactly like that.
        -- X
        ## Wrong permissions for multi-role users in the admin console
        Symptom: the sibling admin console let multi-role users do what their deciding role forbids. Fix: its
        precedence was privilege order; set it to {chain}, the product-wide order.
        -- docs/adr/0006-multi-role-users.md
        # ADR-0006: Users with several roles

        Status: Accepted

        A user's roles are the ones granted to them directly plus those of their teams; a role granted twice
        counts once.
        -- docs/adr/0004-role-precedence.md
        # ADR-0004: Role precedence

        Status: Superseded

        The most privileged role wins: {' > '.join(s.privilege)}. Superseded after the compliance review.
        -- docs/adr/0003-deny-by-default.md
        # ADR-0003: Deny by default

        Status: Accepted

        An action no policy mentions is denied.
        -- docs/adr/0005-service-accounts.md
        # ADR-0005: Service accounts

        Status: Accepted

        Service accounts hold exactly one role and never a human role.
        -- docs/CONVENTIONS.md
        - Role names are lowercase singular nouns; actions are lowercase verbs.
        -- docs/CONVENTIONS.md
        - Permission checks take an iterable of role names; order of the iterable is irrelevant.
        -- .agent/preferences.md
        - (review of #466) Unknown roles are an error, not a silent deny.
        -- .agent/past_fixes.md
        ## Session kept old roles
        Symptom: a removed role still applied until logout. Fix: re-read roles on every permission check.
        """),
    )


# The filler avoids the told precedence's tokens (candidates are many, and a drawn precedence's
# tokens are rarely in the plain filler).
SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes=SIZES)
GENERATOR = Family(FAMILY, "exploration-heavy", "the precedence among roles that decides a multi-role "
                   "user's permissions (an unconventional total order)", variants=(0, 1), draw=fact_order,
                   tell=SIZED.tell, tell_sized=SIZED.tell_sized, space=SPACE)
