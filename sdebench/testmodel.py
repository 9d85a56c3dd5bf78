"""`python -m sdebench.testmodel`: the scripted test model server; the same as `sdebench testmodel` (one dispatch table: sdebench.cli)."""

from sdebench.cli import entry

if __name__ == "__main__":
    entry("testmodel")
