"""`python -m sdebench.run`: run the selected tasks under one delivery, agent and model; the same as `sdebench run` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("run")
