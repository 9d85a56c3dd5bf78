"""`python -m sdebench.generate`: emit and validate the benchmark; the same as `sdebench generate` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("generate")
