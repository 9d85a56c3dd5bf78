"""Where the analysis notebook (experiments/analysis.ipynb) reads its episode records from.

`SDEBENCH_RESULTS` names the results dir. The kernel runs in the notebook's own dir (experiments/),
not where the user typed the command, so a relative path is taken from `$PWD`, the dir the shell
that ran `jupyter` was in (the kernel inherits it), and only without `$PWD` from the kernel's cwd.
A dir that does not exist is an error naming both paths, never a silent table of 0 episodes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

RESULTS_ENV = "SDEBENCH_RESULTS"


def results_dir(default: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The absolute results dir of `$SDEBENCH_RESULTS` (relative: from `$PWD`), else `default`."""
    env = os.environ if environ is None else environ
    raw = env.get(RESULTS_ENV, "").strip()
    if not raw:
        path = Path(default)
    else:
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = Path(env.get("PWD") or os.getcwd()) / path
    path = path.resolve()
    if not path.is_dir():
        given = f"{RESULTS_ENV}={raw}" if raw else "the default results dir"
        raise FileNotFoundError(f"{given}: no such dir {path} (a relative path is taken from $PWD; "
                                "give an absolute one if jupyter was not started from a shell there)")
    return path
