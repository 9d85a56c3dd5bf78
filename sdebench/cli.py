"""The `sdebench` command: one subcommand per entry point, plus `tasks` and `episode` to look inside.

    sdebench run agent=oracle delivery=memtool source=K     # = python -m sdebench.run ...
    sdebench plan -m experiment=ablation agent=llm model=openai   # episodes and cost, nothing run
    sdebench tasks list [--tasks-dir DIR] [--source K]
    sdebench tasks show ID [--reveal]                       # the fact only with --reveal
    sdebench episode show RECORD                            # the trajectory in the terminal
    sdebench export inspect results/ --out logs/            # Inspect AI eval logs, for `inspect view`

`python -m sdebench` is the same command, and `python -m sdebench.<name> ARGS` is `sdebench <name> ARGS`:
every way in goes through the one table below (`COMMANDS`) to the same function.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

# The one dispatch table: subcommand -> `module:function`, called with the rest of the command line.
COMMANDS = {
    "run": "sdebench.runs.run:main",
    "plan": "sdebench.runs.plan:main",
    "stream": "sdebench.runs.stream:main",
    "generate": "sdebench.generation.generate:main",
    "results": "sdebench.runs.results:main",
    "report": "sdebench.analysis.report:main",
    "serve": "sdebench.env.server:main",
    "interop": "sdebench.interop.__main__:main",
    "export": "sdebench.interop.export:main",
    "testmodel": "sdebench.testing.testmodel:main",
    "tasks": "sdebench.cli:tasks_main",
    "episode": "sdebench.cli:episode_main",
}
USAGE = f"usage: sdebench {{{','.join(COMMANDS)}}} ...  (sdebench SUBCOMMAND --help for each)"


def tasks_dir_or_exit(raw: str) -> Path:
    """The tasks dir `raw`, or exit 2 with one line naming where it looked."""
    p = Path(raw)
    if not p.is_dir():
        print(f"sdebench tasks: error: no tasks dir at {p.resolve()} (run where ./tasks is, or pass --tasks-dir DIR)",
              file=sys.stderr)
        sys.exit(2)
    return p


def tasks_main(argv: list[str]) -> int:
    """`sdebench tasks list|show`: the tasks of a tasks dir, or one task's public view."""
    from sdebench.tasks.record import TaskError
    from sdebench.tasks.selection import select

    ap = argparse.ArgumentParser(prog="sdebench tasks", description=tasks_main.__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="one line per task: id, source, competency, bottleneck, repo size")
    ls.add_argument("--tasks-dir", default="tasks")
    ls.add_argument("--source")
    ls.add_argument("--family")
    ls.add_argument("--competency", help="a comma list of competencies (recall, conflict, ...)")
    ls.add_argument("--tier", help="recall or hard")
    show = sub.add_parser("show", help="statement, placement, sizes, memory artifacts (the fact only with --reveal)")
    show.add_argument("id")
    show.add_argument("--tasks-dir", default="tasks")
    show.add_argument("--reveal", action="store_true", help="also print the fact and the conventional guess")
    args = ap.parse_args(argv)
    root = tasks_dir_or_exit(args.tasks_dir)
    try:
        if args.cmd == "list":
            tasks = select(root, source=args.source, family=args.family, competency=args.competency, tier=args.tier,
                           on_error=lambda m: print(f"skipping: {m}", file=sys.stderr))
            print(f"{'id':40} {'source':6} {'competency':10} {'bottleneck':22} modules commits")
            for t in tasks:
                print(f"{t.id:40} {t.source:6} {t.competency:10} {t.bottleneck:22} {t.modules:7} {t.commits:7}")
            print(f"{len(tasks)} tasks")
            return 0
        (task,) = select(root, ids=args.id)
    except (TaskError, ValueError) as e:
        print(f"sdebench tasks: error: {e}", file=sys.stderr)
        return 2
    print(f"{task.id}: family {task.family}, variant {task.variant}, bottleneck {task.bottleneck}, "
          f"competency {task.competency} ({task.tier} tier)")
    print(f"placement: the fact lives in {task.source}")
    print(f"repo: {task.modules} modules, {task.commits} commits, HEAD {task.head_sha[:12]}")
    print("memory artifacts: " + (", ".join(task.memory_artifacts) or "-"))
    print("tests: " + ", ".join(f"{g} {len(ids)}" for g, ids in task.tests.groups().items()))
    print(f"\nstatement:\n{task.statement.rstrip()}")
    if args.reveal:
        print(f"\nfact: {task.fact}\nconventional guess: {task.conventional_guess}")
    return 0


def _event_line(e: dict) -> str:
    kind = e.get("kind", "?")
    rest = {k: v for k, v in e.items() if k not in ("i", "t", "kind", "traceback")}
    text = json.dumps(rest, default=str)
    return f"{e.get('i', ''):>4} {kind:14} {text[:300]}{'...' if len(text) > 300 else ''}"


def episode_main(argv: list[str]) -> int:
    """`sdebench episode show RECORD`: an episode's outcome and its trajectory, one event a line."""
    from sdebench.agents import trajectory
    from sdebench.runs import results
    from sdebench.runs.record import RecordError

    ap = argparse.ArgumentParser(prog="sdebench episode", description=episode_main.__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    show = sub.add_parser("show", help="print the record's outcome and trajectory")
    show.add_argument("record", help="an episode record (.json) or its trajectory (.jsonl)")
    args = ap.parse_args(argv)
    path = Path(args.record).with_suffix(".json")
    try:
        rec = results.load_record(path)
    except (OSError, RecordError) as e:
        print(f"sdebench episode: error: {path}: {e}", file=sys.stderr)
        return 2
    from sdebench.runs.rules import is_error, outcome_label

    state = f"resolved at submit {rec.resolved_at}" if rec.resolved and not is_error(rec) else outcome_label(rec)
    print(f"{rec.task_id} delivery={rec.delivery} agent={rec.agent} model={rec.model} seed={rec.seed}: {state}, "
          f"{rec.interventions} interventions, {rec.turns} turns, ${rec.cost_usd:.4f}, {rec.wall_s:.1f}s"
          + (f"\nerror: {rec.error}" if rec.error else ""))
    traj = Path(rec.trajectory) if rec.trajectory else results.trajectory_path(path)
    if not traj.is_file():
        traj = results.trajectory_path(path)
    if not traj.is_file():
        print("(no trajectory file)")
        return 0
    for e in trajectory.read(traj):
        print(_event_line(e))
    return 0


def main(argv: list[str] | None = None) -> int:
    """`sdebench SUBCOMMAND ...`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + (__doc__ or "").strip())
        return 0 if args else 2
    sub, rest = args[0], args[1:]
    if sub not in COMMANDS:
        print(f"sdebench: error: unknown subcommand {sub!r} (choose {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    module, _, name = COMMANDS[sub].partition(":")
    command = getattr(importlib.import_module(module), name)
    sys.argv = [f"sdebench {sub}", *rest]  # what Hydra and argparse read for the program name
    try:
        code = command(rest)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code if isinstance(code, int) else 0


def entry(name: str) -> None:
    """`python -m sdebench.<name> ARGS`: exit with `sdebench <name> ARGS`."""
    sys.exit(main([name, *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
