"""`python -m sdebench`: the `sdebench` command (see sdebench.cli)."""

import sys

from sdebench.cli import main

if __name__ == "__main__":
    sys.exit(main())
