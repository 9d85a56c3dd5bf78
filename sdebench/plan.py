"""`python -m sdebench.plan`: what `sdebench run` with the same overrides would run and cost (see `sdebench.runs.plan`)."""

import sys

from sdebench.runs.plan import main

if __name__ == "__main__":
    sys.exit(main())
