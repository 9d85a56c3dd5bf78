"""Fact tokens: every spelling that would reveal a fact, found in text the one way every check finds them.

Matched on case-folded, whitespace-collapsed text at word boundaries (docs/design.md, "fact tokens").
The lowest layer that needs it: generation checks placements and leaks with it, delivery and the
retrieval figures of a run judge what the agent was shown with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache


def normalise(text: str) -> str:
    """Case-fold and collapse whitespace, as leak checks compare text."""
    return " ".join(text.casefold().split())


@cache
def _normal_token(token: str) -> str:
    return normalise(token)


@cache
def token_pattern(token: str) -> re.Pattern[str]:
    """The pattern that finds `token` in normalised text at word boundaries (the fact-token rule)."""
    # A token must not be glued to more word characters, except that a number may carry a unit:
    # '417' is found in '417s' but not in '4170' or 'a417'; 'half_down' is not in 'round_half_down'.
    t = normalise(token)
    left = r"(?<![a-z0-9])" if t[:1].isdigit() else (r"(?<![a-z0-9_])" if t[:1].isalnum() else "")
    right = r"(?![0-9])" if t[-1:].isdigit() else (r"(?![a-z0-9_])" if t[-1:].isalnum() else "")
    return re.compile(left + re.escape(t) + right)


def find_tokens(text: str, tokens: Iterable[str]) -> list[str]:
    """The fact tokens that occur in `text` (normalised comparison)."""
    folded, norm, found = text.casefold(), None, []
    for t in tokens:
        nt = _normal_token(t)
        if not nt:
            continue
        # A token without a space is found in the case-folded text exactly where it is found in the
        # normalised one (collapsing whitespace changes no other character, nor a word boundary):
        # the text is normalised only for tokens of several words.
        if " " in nt:
            norm = " ".join(folded.split()) if norm is None else norm
            hay = norm
        else:
            hay = folded
        # The substring test first: the regex only decides word boundaries, and is slow on long texts.
        if nt in hay and token_pattern(t).search(hay):
            found.append(t)
    return found
