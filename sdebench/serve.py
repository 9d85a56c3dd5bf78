"""`python -m sdebench.serve`: the environment over HTTP; the same as `sdebench serve` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("serve")
