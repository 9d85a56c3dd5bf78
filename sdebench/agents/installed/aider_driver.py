"""Runs aider inside the sandbox with its state kept out of the repository.

    python3 aider_driver.py --state-dir DIR -- AIDER-ARGS...

aider keeps its repo-map tag cache in `<repo>/.aider.tags.cache.v*`; in an episode that dir would
be part of the submitted diff. The driver points the cache at DIR (the agent's HOME) and then runs
aider's own `main` with the arguments unchanged. Copied into the sandbox next to the relay;
imports only aider and the standard library.
"""

import argparse
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("aider_args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    rest = args.aider_args[1:] if args.aider_args[:1] == ["--"] else args.aider_args

    from aider import main as aider_main
    from aider.repomap import RepoMap

    # pathlib joins an absolute path as itself: Path(root) / "/abs" == "/abs"
    RepoMap.TAGS_CACHE_DIR = os.path.join(args.state_dir, RepoMap.TAGS_CACHE_DIR)
    return aider_main.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
