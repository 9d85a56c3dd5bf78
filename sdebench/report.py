"""`python -m sdebench.report`: the HTML report of a sweep, or FINDINGS.md (see `sdebench.analysis.report`)."""

import sys

from sdebench.analysis.report import main

if __name__ == "__main__":
    sys.exit(main())
