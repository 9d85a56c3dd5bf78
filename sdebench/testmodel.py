"""`python -m sdebench.testmodel`: the scripted test model server (see `sdebench.testing.testmodel`)."""

import sys

from sdebench.testing.testmodel import main

if __name__ == "__main__":
    sys.exit(main())
