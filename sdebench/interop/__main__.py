"""`python -m sdebench.interop <subcommand> ...`: convert tasks and episodes to and from neighbouring formats."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdebench.interop import container
from sdebench.tasks.record import Task, TaskError
from sdebench.tasks.selection import select


def _select(tasks_dir: Path, ids: str | None) -> tuple[list[Task], list[str]]:
    """Tasks of `tasks_dir` (optionally only `ids`, comma-separated) and one-line problems (bad dirs, unknown ids)."""
    errors: list[str] = []
    return select(tasks_dir, ids=ids, on_error=errors.append), errors


def _report(skipped: list[tuple[str, str]]) -> None:
    for where, why in skipped:
        print(f"skipped {where}: {why}", file=sys.stderr)


def _factory(args: argparse.Namespace):
    """The sandbox the exports collect node ids in (the task store masked)."""
    from sdebench.sandbox import make_factory

    return make_factory({"backend": args.sandbox, "tasks_dir": str(Path(args.tasks_dir).resolve())})


def _nothing(out: Path, tasks: list[Task], errors: list[str], tasks_dir: Path) -> int:
    """Exit status and reason when an export wrote nothing."""
    if not tasks and not errors:
        why = f"no tasks in {tasks_dir}"
    else:
        why = "every selected task was skipped (reasons above)"
    print(f"error: nothing exported to {out}: {why}", file=sys.stderr)
    return 1


def cmd_bugsinpy_import(args: argparse.Namespace) -> int:
    """Import a BugsInPy-v2 parquet."""
    from sdebench.interop import bugsinpy as bp
    from sdebench.sandbox import make_factory

    # Only rows carrying a fixed solution run anything (that solution, in this sandbox).
    factory = make_factory({"backend": args.sandbox, "tasks_dir": str(Path(args.out).resolve())})
    report = bp.import_parquet(args.parquet, args.out, factory)
    _report([(s.where, s.reason) for s in report.skipped])
    for n in report.notes:
        print(f"note {n.where}: {n.reason}", file=sys.stderr)
    print(f"imported {len(report.done)} task(s) into {args.out}; skipped {len(report.skipped)} row(s)")
    return 0 if report.done or not report.skipped else 1


def cmd_bugsinpy_export(args: argparse.Namespace) -> int:
    """Export tasks as a BugsInPy-v2 parquet."""
    from sdebench.interop import bugsinpy as bp

    tasks, errors = _select(args.tasks_dir, args.ids)
    report = bp.export_parquet(tasks, args.out)
    _report([("task dir", e) for e in errors] + [(s.where, s.reason) for s in report.skipped])
    print(f"exported {len(report.done)} task(s) to {args.out}; skipped {len(report.skipped) + len(errors)}")
    return 0 if report.done else _nothing(args.out, tasks, errors, args.tasks_dir)


def cmd_harbor_export(args: argparse.Namespace) -> int:
    """Export tasks as Harbor task dirs."""
    from sdebench.interop import harbor

    tasks, errors = _select(args.tasks_dir, args.ids)
    skipped = [("task dir", e) for e in errors]
    factory = _factory(args)
    done = 0
    for t in tasks:
        try:
            harbor.export_task(t, args.out, factory, base_image=args.base_image)
            done += 1
        except (harbor.HarborError, OSError) as e:
            skipped.append((t.id, str(e)))
    _report(skipped)
    print(f"exported {done} Harbor task(s) into {args.out}; skipped {len(skipped)}")
    return 0 if done else _nothing(args.out, tasks, errors, args.tasks_dir)


def cmd_swebench_export(args: argparse.Namespace) -> int:
    """Export tasks as SWE-bench instance JSONL or a SWE-bench task repo."""
    from sdebench.interop import swebench

    tasks, errors = _select(args.tasks_dir, args.ids)
    factory = _factory(args)
    if args.task_repo:
        out = args.task_repo
        w = swebench.export_task_repo(tasks, out, factory, base_image=args.base_image)
    else:
        out = args.out
        w = swebench.export_instances(tasks, out, factory)
    _report([("task dir", e) for e in errors] + w.skipped)
    print(f"wrote {w.count} instance(s) to {out}; skipped {len(w.skipped) + len(errors)}")
    return 0 if w.count else _nothing(out, tasks, errors, args.tasks_dir)


def cmd_swebench_predictions(args: argparse.Namespace) -> int:
    """Export episode records as SWE-bench predictions JSONL."""
    from sdebench.interop import swebench

    filters = {"agent": args.agent, "model": args.model, "delivery": args.delivery, "seed": args.seed}
    w = swebench.export_predictions(args.results, args.out, args.name, **filters)
    _report(w.skipped)
    print(f"wrote {w.count} prediction(s) to {args.out}; skipped {len(w.skipped)} file(s)")
    return 0 if w.count else 1


def parser() -> argparse.ArgumentParser:
    """The CLI parser."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.interop", description=__doc__.split(":")[1].strip())
    sub = ap.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")

    p = sub.add_parser("bugsinpy-import", help="BugsInPy-v2 tasks.parquet -> sdebench task dirs")
    p.add_argument("parquet", type=Path)
    p.add_argument("--out", type=Path, required=True, help="tasks dir to write into")
    p.add_argument("--sandbox", default="local", choices=("local", "docker", "unsafe_local"),
                   help="sandbox that records the observations of a row's fixed solution, where it has one "
                        "(default local)")
    p.set_defaults(func=cmd_bugsinpy_import)

    def tasks_args(p: argparse.ArgumentParser) -> None:
        """The task-selection flags shared by the export subcommands."""
        p.add_argument("--tasks-dir", type=Path, default=Path("tasks"))
        p.add_argument("--ids", help="comma-separated task ids (default: all)")

    def base_image_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--base-image", default=container.DEFAULT_BASE_IMAGE,
                       help=f"image the task Dockerfile starts FROM (default {container.DEFAULT_BASE_IMAGE}); "
                            "git and pytest are installed only if it lacks them")

    def sandbox_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--sandbox", default="local", choices=("local", "docker", "unsafe_local"),
                       help="sandbox for the oracle run that collects full node ids (default local)")

    p = sub.add_parser("bugsinpy-export", help="sdebench tasks -> BugsInPy-v2 parquet (single-file tasks)")
    tasks_args(p)
    p.add_argument("--out", type=Path, required=True, help="parquet file to write")
    p.set_defaults(func=cmd_bugsinpy_export)

    p = sub.add_parser("harbor-export", help="sdebench tasks -> Harbor task dirs")
    tasks_args(p)
    p.add_argument("--out", type=Path, required=True, help="dir to write task dirs into")
    base_image_arg(p)
    sandbox_arg(p)
    p.set_defaults(func=cmd_harbor_export)

    p = sub.add_parser("swebench-export", help="sdebench tasks -> SWE-bench instance JSONL or task repo")
    tasks_args(p)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="JSONL file to write")
    where.add_argument("--task-repo", type=Path, help="SWE-bench 5.x task repo dir to write into")
    base_image_arg(p)
    sandbox_arg(p)
    p.set_defaults(func=cmd_swebench_export)

    p = sub.add_parser("swebench-predictions", help="episode records -> SWE-bench predictions JSONL")
    p.add_argument("results", nargs="+", type=Path, help="results dirs or record files")
    p.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    p.add_argument("--name", help="model_name_or_path to write (default: the record's model)")
    for key in ("agent", "model", "delivery", "seed"):
        p.add_argument(f"--{key}", help=f"only records with this {key}")
    p.set_defaults(func=cmd_swebench_predictions)
    return ap


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; bad input is one line on stderr and exit 2."""
    from sdebench.interop.bugsinpy import FormatError
    from sdebench.interop.swebench import ExportError

    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (FormatError, ExportError, TaskError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from sdebench.cli import entry

    entry("interop")
