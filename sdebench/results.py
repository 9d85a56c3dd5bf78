"""`python -m sdebench.results`: summarise or check a results dir (see `sdebench.runs.results`)."""

import sys

from sdebench.runs.results import main

if __name__ == "__main__":
    sys.exit(main())
