"""`python -m sdebench.results`: summarise or check a results dir; the same as `sdebench results` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("results")
