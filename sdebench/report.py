"""`python -m sdebench.report`: the HTML report of a sweep, or FINDINGS.md; the same as `sdebench report` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("report")
