"""The code parts of a family's `Story` in the shape they always have (its prose: `prose.py`).

Every family writes its rule module in five versions from one renderer, and its package with an
`__init__.py` and a README; these helpers hold that shape, so a family's `tell` holds only its own
content:

    Story(
        package=pkg, module=f"{pkg}/config.py",
        **rule_versions(lambda ttl, later: config_module(ttl, extra=later), right, wrong, conventional),
        base_files=package_files(pkg, "ratecache: a cache for fx quotes.", readme, {...}),
        ...,
        **prose(f'''...'''))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def rule_versions(render: Callable[[Any, bool], str], right: Any, wrong: Any, conventional: Any,
                  first_wrong: Any = None) -> dict[str, str]:
    """The rule module's five versions as `Story` fields (`Story(**rule_versions(...))`).

    `render(value, refactored)` writes the module holding `value`, before (False) or after (True) the
    refactor that regresses it in H: introduced `right` (H) or `first_wrong` (default `wrong`) elsewhere,
    `wrong` at HEAD, fixed to `right` by the oracle and to `conventional` by the conventional guess.
    """
    return {
        "v1_correct": render(right, False),
        "v1_buggy": render(wrong if first_wrong is None else first_wrong, False),
        "head_buggy": render(wrong, True),
        "oracle": render(right, True),
        "conventional": render(conventional, True),
    }


def state_versions(render: Callable[..., str], shape: Any) -> dict[str, str]:
    """`rule_versions` of a module written by `render(shape, state, helper=refactored)`, whose state is
    "correct", "buggy" or "conventional" (the multi-hop families' renderers)."""
    return rule_versions(lambda state, later: render(shape, state, helper=later), "correct", "buggy", "conventional")


def package_files(package: str, about: str, readme: str, files: dict[str, str]) -> dict[str, str]:
    """`Story.base_files`: the package's `__init__.py` (its docstring `about`), `files` (the other
    modules and the existing suite), and `README.md` (`readme`)."""
    return {f"{package}/__init__.py": f'"""{about}"""\n', **files, "README.md": readme}
