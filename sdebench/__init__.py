"""sdebench: memory-ablation experiments on coding agents."""

__version__ = "0.1.0"
