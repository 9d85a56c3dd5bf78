"""sdebench: memory-ablation experiments on coding agents."""

from pathlib import Path

__version__ = "0.1.0"
# The Hydra config tree ships inside the package (`sdebench/conf`, in a checkout a link to the top-level
# `conf/`), so an installed wheel finds it from any directory; an absolute path, because the entry
# points run as `python -m sdebench.<name>`. Here, at the root, because the run commands and the agent
# installer both read it.
CONF_DIR = str(Path(__file__).resolve().parent / "conf")
# The family generators ship the same way (`sdebench/generators`, in a checkout a link to the top-level
# `generators/`): `sdebench generate`, the prober and the naive readers read them from an installed wheel.
GENERATORS_DIR = str(Path(__file__).resolve().parent / "generators")
