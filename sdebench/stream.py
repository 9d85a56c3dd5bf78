"""`python -m sdebench.stream`: run an ordered stream of tasks with carried memory; the same as `sdebench stream` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("stream")
