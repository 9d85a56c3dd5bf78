"""`python -m sdebench.export`: episode records in another tool's format; the same as `sdebench export` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("export")
