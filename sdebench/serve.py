"""`python -m sdebench.serve`: the environment over HTTP (see `sdebench.env.server`)."""

import sys

from sdebench.env.server import main

if __name__ == "__main__":
    sys.exit(main())
