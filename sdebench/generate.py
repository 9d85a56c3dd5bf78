"""`python -m sdebench.generate`: emit and validate the benchmark (see `sdebench.generation.generate`)."""

import sys

from sdebench.generation.generate import main

if __name__ == "__main__":
    sys.exit(main())
