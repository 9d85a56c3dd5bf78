"""The `sdebench` command: one subcommand per entry point, plus `tasks` and `episode` to look inside.

    sdebench run agent=oracle delivery=memtool source=K     # = python -m sdebench.run ...
    sdebench plan -m experiment=ablation agent=llm model=openai   # episodes and cost, nothing run
    sdebench tasks list [--tasks-dir DIR] [--source K]
    sdebench tasks show ID [--reveal]                       # the fact only with --reveal
    sdebench results DIR --by family,competency --where agent=llm --format csv   # slice the results
    sdebench episode list DIR [--where delivery=memtool]     # one line per episode
    sdebench episode show ID [DIR]                          # its conversation: messages, tools, grades
    sdebench export inspect results/ --out logs/            # Inspect AI eval logs, for `inspect view`

`python -m sdebench` is the same command, and `python -m sdebench.<name> ARGS` is `sdebench <name> ARGS`:
every way in goes through the one table below (`COMMANDS`) to the same function.
"""

from __future__ import annotations

import argparse
import importlib
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


def _find_episode(ident: str, dirs: list[str]):
    """The record of `ident` (a record or trajectory file, or an episode key or its unique prefix under `dirs`)
    and its path; None when there is no such episode."""
    from sdebench.runs import results

    p = Path(ident)
    if p.suffix in (".json", ".jsonl") and p.with_suffix(".json").is_file():
        return results.read_record(p.with_suffix(".json")), p.with_suffix(".json")
    found = [(r, f) for f in results.record_files(*[d for d in dirs if Path(d).exists()])
             if (r := results.read_record(f)) is not None and r.key and r.key.startswith(ident)]
    keys = {r.key for r, _ in found}
    if len(keys) > 1:
        raise ValueError(f"{ident!r} names {len(keys)} episodes ({', '.join(sorted(keys)[:5])}...): give more of the key")
    return found[0] if found else (None, None)


def episode_main(argv: list[str]) -> int:
    """`sdebench episode list|show`: one line per episode (filtered with --where), or one episode as a readable
    conversation. Exit 1 when there is nothing to show."""
    from sdebench.agents import trajectory
    from sdebench.runs import results, transcript
    from sdebench.runs import where as where_mod
    from sdebench.runs.rules import outcome_label

    ap = argparse.ArgumentParser(prog="sdebench episode", description=episode_main.__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="one line per episode: id, family, variant, source, delivery, agent, outcome, "
                        "interventions, cost")
    ls.add_argument("dirs", nargs="*", default=["results"], help="results, run or multirun dirs (default: results)")
    ls.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="as in `sdebench results`: KEY=VALUE or KEY!=VALUE on any record field; repeatable")
    show = sub.add_parser("show", help="the episode's conversation: messages, tool calls, grades and feedback, outcome")
    show.add_argument("id", help="an episode id (its key, or a unique prefix) or a record file (.json/.jsonl)")
    show.add_argument("dirs", nargs="*", default=["results"], help="where to look for the id (default: results)")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        try:
            conditions = where_mod.parse(args.where)
        except where_mod.FilterError as e:
            print(f"sdebench episode: error: {e}", file=sys.stderr)
            return 2
        every = results.read_records(*[d for d in args.dirs if Path(d).exists()])
        recs = sorted(where_mod.select(every, conditions),
                      key=lambda r: (r.identity.task_id, r.identity.delivery, r.identity.agent, r.identity.seed, str(r.key)))
        if not recs:
            print(f"sdebench episode: {where_mod.nothing(conditions, len(every), args.dirs)}", file=sys.stderr)
            return 1
        print(f"{'id':16} {'family':22} {'var':>3} {'source':6} {'delivery':8} {'agent':16} {'outcome':30} "
              f"{'interv':>6} {'cost':>9}")
        for r in recs:
            i = r.identity
            print(f"{r.key or '-':16} {i.family:22} {i.variant:>3} {i.source:6} {i.delivery:8} {i.agent:16} "
                  f"{outcome_label(r):30} {r.outcome.interventions:>6} {r.usage.cost_usd:>9.4f}")
        print(f"{len(recs)} episodes" + (f" ({where_mod.describe(conditions)})" if conditions else ""))
        return 0
    try:
        rec, path = _find_episode(args.id, args.dirs)
    except ValueError as e:
        print(f"sdebench episode: error: {e}", file=sys.stderr)
        return 2
    if rec is None:
        print(f"sdebench episode: no episode {args.id!r} under {', '.join(args.dirs)} "
              "(`sdebench episode list DIR` shows the ids)", file=sys.stderr)
        return 1
    traj = Path(rec.storage.trajectory) if rec.storage.trajectory else results.trajectory_path(path)
    if not traj.is_file():
        traj = results.trajectory_path(path)
    sys.stdout.write(transcript.render(rec, trajectory.read(traj) if traj.is_file() else None))
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
