"""`sdebench export FORMAT RESULTS_DIR... --out DIR`: a sweep's episode records in another tool's format.

    sdebench export inspect results/ --out inspect-logs/    # then: inspect view --log-dir inspect-logs/

`inspect`: one Inspect AI eval log (JSON format) per sweep cell, one sample per episode
(sdebench.interop.inspect_log, its messages from sdebench.interop.inspect_messages; docs/interop.md). Files that are not episode records are listed on
stderr and skipped; nothing exported is exit 1, a missing results dir exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_inspect(args: argparse.Namespace) -> int:
    """Export episode records as Inspect AI eval logs."""
    from sdebench.interop import inspect_log

    missing = [str(p) for p in args.results if not p.exists()]
    if missing:
        print(f"sdebench export: error: no results dir or record at {', '.join(missing)}", file=sys.stderr)
        return 2
    report = inspect_log.export(args.results, args.out)
    for where, why in report.skipped:
        print(f"skipped {where}: {why}", file=sys.stderr)
    if not report.logs:
        print(f"sdebench export: error: nothing exported to {args.out}: no episode records under "
              f"{', '.join(map(str, args.results))}", file=sys.stderr)
        return 1
    print(f"wrote {len(report.logs)} Inspect log(s) ({report.samples} samples, {report.errors} with an error) "
          f"to {args.out}; skipped {len(report.skipped)} file(s)")
    return 0


def parser() -> argparse.ArgumentParser:
    """The CLI parser."""
    ap = argparse.ArgumentParser(prog="sdebench export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="format", required=True, metavar="FORMAT")
    p = sub.add_parser("inspect", help="episode records -> Inspect AI eval logs (one per sweep cell), for `inspect view`",
                       description="One Inspect AI eval log (.json) per sweep cell (kind, task set, feedback policy, "
                                   "agent, model, delivery, config hash), one sample per episode: messages, tool "
                                   "calls, scores (resolved, resolved_first, interventions), metadata (family, source, "
                                   "delivery, agent, tier, competency, outcome, ...), usage. Episodes that ended in "
                                   "error are samples with an error.")
    p.add_argument("results", nargs="+", type=Path, help="results dirs, run/multirun dirs or record files")
    p.add_argument("--out", type=Path, required=True, help="dir to write the logs into (inspect view --log-dir DIR)")
    p.set_defaults(func=cmd_inspect)
    return ap


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except OSError as e:
        print(f"sdebench export: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from sdebench.cli import entry

    entry("export")
