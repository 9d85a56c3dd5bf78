"""`python -m sdebench.plan`: what `sdebench run` with the same overrides would run and cost; the same as `sdebench plan` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("plan")
