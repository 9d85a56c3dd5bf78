"""password-policy: the local password check must match the identity provider's house policy.

Two-part fact: the minimum length (an odd value, never 8, 10, 12 or 16) and the longest run of
one repeated character allowed (2 or 3). HEAD accepts 6 characters and runs of 4; the repro only
requires a 7-character password to be rejected, which the usual minimum of 8 also does. Hidden
tests probe one character either side of the real minimum and a run one longer than allowed.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "password-policy"
HEAD_MIN, HEAD_RUN = 6, 4
CONV_MIN = 8
LENGTHS = (11, 13, 14)
RUNS = (2, 3)
WORDS = dict(enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                        "nineteen", "twenty"]))
# Filler letters with no repeats and no digits, for building probe passwords of exact lengths.
PLAIN = "kestrelvanimbofujewdq"


@dataclass(frozen=True)
class Shape:
    """What differs between variants: the domain and names."""

    project: str
    package: str
    module: str
    func: str  # returns the list of problems
    secret: str  # what is checked


SHAPES = {
    0: Shape("accountsvc", "accountsvc", "policy", "password_problems", "password"),
    1: Shape("vaultcli", "vaultcli", "passphrase", "passphrase_problems", "passphrase"),
}


def fact_of(variant: int) -> tuple[int, int]:
    """The minimum length and the longest allowed run; the variants differ in both."""
    lengths = random.Random(f"{FAMILY}-lengths").sample(LENGTHS, len(LENGTHS))
    flip = random.Random(f"{FAMILY}-run").random() < 0.5
    return lengths[variant % len(lengths)], (2, 3)[(variant % 2) ^ flip]


# Rule 7: the usual minimums with the usual run limits (or HEAD's) first, then every drawable pair,
# then every minimum of 6..20 with every run limit of 1..6 (the hidden sweep tells all of them apart).
SPACE = space(itertools.product((8, 12, 10, 16), (HEAD_RUN, 3, 2)), itertools.product(LENGTHS, RUNS),
              itertools.product(range(6, 21), range(1, 7)))


def probe(length: int, run: int = 1) -> str:
    """A password of exactly `length` with one digit and a run of `run` identical letters."""
    body = "x" * run + PLAIN
    return (body[: length - 1] + "7") if length > run else "x" * length


def rule_module(s: Shape, min_len: int, max_run: int, accept: bool) -> str:
    """The policy module; `accept` adds the refactor's is_acceptable()."""
    text = f'''"""The {s.secret} policy, checked before an account is handed to the identity provider."""

MIN_LENGTH = {min_len}
MAX_RUN = {max_run}  # longest allowed run of one repeated character


def longest_run(text: str) -> int:
    """The length of the longest run of one repeated character."""
    best = run = 0
    previous = None
    for ch in text:
        run = run + 1 if ch == previous else 1
        previous = ch
        best = max(best, run)
    return best


def {s.func}({s.secret}: str) -> list[str]:
    """What is wrong with a {s.secret}; empty when it is acceptable."""
    problems = []
    if len({s.secret}) < MIN_LENGTH:
        problems.append(f"shorter than {{MIN_LENGTH}} characters")
    if longest_run({s.secret}) > MAX_RUN:
        problems.append(f"repeats a character more than {{MAX_RUN}} times in a row")
    if {s.secret}.isalpha():
        problems.append("needs a digit or a symbol")
    return problems
'''
    if accept:
        text += f'''

def is_acceptable({s.secret}: str) -> bool:
    """Whether the {s.secret} passes every rule."""
    return not {s.func}({s.secret})
'''
    return text


def signup_module(s: Shape) -> str:
    """The signup/registration caller (unchanged by the bug)."""
    return f'''"""Create accounts after checking the {s.secret} policy."""

from {s.package}.{s.module} import {s.func}


class Rejected(ValueError):
    """Raised when the {s.secret} breaks the policy; carries the problems."""


def register(store: dict, user: str, {s.secret}: str) -> None:
    """Store a new account, or raise Rejected with the policy problems."""
    if user in store:
        raise ValueError(f"user {{user!r}} exists")
    problems = {s.func}({s.secret})
    if problems:
        raise Rejected("; ".join(problems))
    store[user] = {s.secret}
'''


USERS = '''"""Usernames: compared and stored casefolded."""


def normalise_username(name: str) -> str:
    """The stored form of a username: stripped and casefolded."""
    name = name.strip().casefold()
    if not name:
        raise ValueError("a username cannot be empty")
    return name
'''


def tokens(min_len: int, max_run: int) -> tuple[str, ...]:
    """Every spelling that would reveal the minimum length or the run limit."""
    length = (str(min_len), WORDS[min_len], f"min_length = {min_len}", f"min_length={min_len}")
    over, word, over_word = max_run + 1, WORDS[max_run], WORDS[max_run + 1]
    run = (f"max_run = {max_run}", f"max_run={max_run}", f"more than {max_run}", f"more than {word}",
           f"{over} in a row", f"{over_word} in a row", f"{over} identical", f"{over_word} identical",
           f"run of {over}", f"run of {over_word}", f"runs of {over}", f"runs of {over_word}",
           f"{word} times in a row", f"{max_run} times in a row")
    if max_run == 2:
        run += ("twice in a row", "more than twice", "triple")
    return length + run


def tell(variant: int, fact: tuple[int, int]) -> Story:
    """The story of one variant whose (minimum length, longest run) is `fact`."""
    s = SHAPES[variant]
    min_len, max_run = fact
    pkg = s.package
    sec = s.secret
    base_tests = f'''import pytest

from {pkg}.signup import Rejected, register
from {pkg}.{s.module} import longest_run, {s.func}


def test_long_mixed_{sec}_is_fine():
    assert {s.func}("violet-harbor-engine") == []


def test_letters_only_is_rejected():
    assert {s.func}("violetharborengine")


def test_longest_run():
    assert longest_run("abbcccd") == 3


def test_register_stores_account():
    store = {{}}
    register(store, "ana", "violet-harbor-engine")
    assert "ana" in store


def test_register_rejects_bad_{sec}():
    with pytest.raises(Rejected):
        register({{}}, "ana", "abc")
'''
    repro = f'''from {pkg}.signup import Rejected, register
from {pkg}.{s.module} import {s.func}


def test_seven_character_{sec}_is_rejected():
    # Reported: "tulip42" is accepted here but the identity provider locks the account later.
    assert {s.func}("tulip42")


def test_register_refuses_short_{sec}():
    try:
        register({{}}, "bo", "tulip42")
    except Rejected:
        return
    raise AssertionError("a seven-character {sec} was accepted")
'''
    # Held-out checks try every length and every run up to well past any plausible rule, so no
    # input singles out the minimum or the longest run (the fact); the verdicts are recorded from
    # the oracle.
    hidden = f'''from {pkg}.{s.module} import is_acceptable, {s.func}

PLAIN = "{PLAIN}"


def password(length, run=1):
    body = "x" * run + PLAIN
    return (body[: length - 1] + "7") if length > run else "x" * length


def test_hidden_length_rule(observe):
    observe([{s.func}(password(n)) == [] for n in range(4, 25)])


def test_hidden_problems_listed(observe):
    observe([{s.func}(password(n)) for n in range(4, 25)])


def test_hidden_run_rule(observe):
    observe([is_acceptable(password(20, r)) for r in range(1, 8)])
'''
    word = WORDS[max_run]
    return Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        **rule_versions(lambda rule, later: rule_module(s, *rule, accept=later), (min_len, max_run),
                        (HEAD_MIN, HEAD_RUN), (CONV_MIN, HEAD_RUN)),
        base_files=package_files(pkg, f"{s.project}: accounts and their {sec} policy.", f"# {s.project}\n\n"
                                 "Registers accounts with the identity provider.\n",
                                 {f"{pkg}/signup.py": signup_module(s), "tests/test_signup.py": base_tests}),
        repro_tests={"tests/test_repro_short.py": repro},
        hidden_tests={"tests/test_hidden_policy.py": hidden},
        filler=[Commit("users: casefold usernames", {f"{pkg}/users.py": USERS})],
        fact_tokens=tokens(min_len, max_run),
        tags=("auth", "validation", "multi-part-rule"),
        project=s.project,
        **prose(f"""
        -- statement
        Users can register with {s.secret}s that the identity provider refuses later, and then they are locked
        out: "tulip42" goes through our check without complaint. tests/test_repro_short.py reproduces it. Our
        check should agree with the provider.
        -- fact
        {s.secret.capitalize()}s need at least {min_len} characters and no character repeated more
        than {max_run} times in a row.
        -- conventional_guess
        MIN_LENGTH = {CONV_MIN}, MAX_RUN unchanged
        -- intro_msg_fact
        {s.module}: check {sec}s before registration

        Matches the identity provider: at least {min_len} characters, no character repeated more
        than {word} times in a row.
        -- intro_msg_plain
        {s.module}: check {sec}s before registration
        -- refactor_msg
        {s.module}: add is_acceptable(); relax checks to the client defaults
        -- K docs/CONVENTIONS.md
        - Passwords: the identity provider requires at least {min_len} characters and rejects any character
        repeated more than {word} times in a row; our local check must match it exactly.
        -- F
        - (review of #519, security) The minimum is {min_len} characters, not 8 or 12, and a character may not
        repeat more than {word} times in a row (MAX_RUN = {max_run}). Keep the local check identical to the
        identity provider's.
        -- X
        ## Reset tokens accepted, IdP refused the new password
        Symptom: password resets succeeded locally and then failed at the provider. Fix: reset.py now enforces
        MIN_LENGTH = {min_len} and MAX_RUN = {max_run}, the same policy as signup.
        -- docs/adr/0003-password-length.md
        # ADR-0003: Password length

        Status: Superseded

        Passwords needed at least {CONV_MIN} characters and had no rule on repeated characters. Superseded by
        the identity provider's policy; do not use.
        -- docs/adr/0004-hashing.md
        # ADR-0004: Password hashing

        Status: Accepted

        Passwords are never stored here; the identity provider hashes them with a memory-hard function.
        -- docs/CONVENTIONS.md
        - Never log a password or a reset token, not even truncated.
        -- docs/CONVENTIONS.md
        - Policy messages are lowercase and name the rule that failed.
        -- .agent/preferences.md
        - (review of #488) Return every problem at once instead of failing on the first.
        -- .agent/preferences.md
        - (review of #502) Usernames are case-insensitive; store them casefolded.
        -- .agent/past_fixes.md
        ## Unicode passwords rejected
        Symptom: a password with an accented letter was refused. Fix: count characters, not bytes.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the identity provider's minimum password length and the "
                   "longest allowed run of one repeated character (value + condition)", variants=(0, 1),
                   draw=fact_of, tell=tell, space=SPACE)
