"""Interop with neighbouring task formats: BugsInPy-v2 parquet, Harbor task dirs, SWE-bench JSONL.

`python -m sdebench.interop <subcommand> ...`; see docs/interop.md.
"""
