"""Every code block of README.md and docs/*.md runs as written.

Python blocks are executed, each file's blocks in order in one namespace, in a temp dir whose
`results/` holds the committed reference sweep's records. In shell blocks every sdebench command
(`sdebench X ...`, `python -m sdebench.X ...`) goes through the real dispatch to the real parser of
its subcommand and stops there: argparse options parse, Hydra overrides pass the same check `run`,
`plan` and `stream` make before anything runs (group options, keys, types). A command of an
`experiments/` script is parsed by that script's own parser. The analysis notebook's command is run
by tests/experiments/test_notebook.py. A block marked `<!-- not run: WHY -->` is only listed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import runpy
import shutil
import sys
from pathlib import Path

import pytest

from tests.docblocks import ROOT, Block, blocks, commands, doc_files, script_command, sdebench_command

ALL = [b for p in doc_files() for b in blocks(p)]
# Blocks that cannot run here, each marked in its doc with the reason; keep this short.
MAX_NOT_RUN = 1


class Parsed(Exception):
    """Raised where a command's arguments have been parsed, before it does anything."""


@contextlib.contextmanager
def parse_only():
    """Within: every argparse parser and the Hydra override check stop (Parsed) once the arguments parse."""
    from sdebench.runs import sweep

    parse_args, check_overrides, argv = argparse.ArgumentParser.parse_args, sweep.check_overrides, sys.argv

    def parsed_args(self, args=None, namespace=None):
        parse_args(self, args, namespace)
        raise Parsed(self.prog)

    def checked(args, conf_dir, config_name):
        check_overrides(args, conf_dir, config_name)
        raise Parsed(config_name)

    argparse.ArgumentParser.parse_args, sweep.check_overrides = parsed_args, checked
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args, sweep.check_overrides, sys.argv = parse_args, check_overrides, argv


def check_command(cmd: list[str]) -> str | None:
    """None if `cmd` (an sdebench or experiments/ command) parses; else one line saying why not."""
    from sdebench import cli

    line = " ".join(cmd)
    if sd := sdebench_command(cmd):
        sub, args = sd
        if "." in sub:  # a module of the package with a command line of its own (`python -m sdebench.memory.install`)
            import importlib

            try:
                main = importlib.import_module(f"sdebench.{sub}").main
            except (ImportError, AttributeError) as e:
                return f"{line}: no module command sdebench.{sub} ({type(e).__name__})"
            with parse_only():
                try:
                    main(list(args))
                except Parsed:
                    return None
                except SystemExit as e:
                    return f"{line}: exit {e.code} while parsing its arguments"
            return f"{line}: ran without parsing arguments"
        if sub not in cli.COMMANDS:
            return f"{line}: no subcommand {sub!r}"
        err = io.StringIO()
        with parse_only(), contextlib.redirect_stderr(err):
            try:
                code = cli.main([sub, *args])
            except Parsed:
                return None
            except Exception as e:  # noqa: BLE001 - the override check's one line is the message
                return f"{line}: {type(e).__name__}: {e}"
        said = err.getvalue().strip().splitlines()
        return f"{line}: exit {code} before its arguments were parsed" + (f": {said[-1]}" if said else "")
    if sc := script_command(cmd):
        script, args = sc
        if not (ROOT / script).is_file():
            return f"{line}: no script {script}"
        err = io.StringIO()
        with parse_only(), contextlib.redirect_stderr(err):
            sys.argv = [script, *args]
            try:
                runpy.run_path(str(ROOT / script), run_name="__main__")
            except Parsed:
                return None
            except SystemExit as e:
                said = err.getvalue().strip().splitlines()
                return f"{line}: exit {e.code} while parsing its arguments" + (f": {said[-1]}" if said else "")
        return f"{line}: ran without parsing arguments"
    return None  # another tool's command (pip, harbor, vllm, ...): not ours to check


CHECKED: dict[tuple[str, ...], str | None] = {}  # a command repeated across the docs is checked once


def shell_problems(block: Block) -> list[str]:
    """Every sdebench or experiments/ command of a shell block that does not parse."""
    problems = []
    for cmd in commands(block.text):
        if tuple(cmd) not in CHECKED:
            CHECKED[tuple(cmd)] = check_command(cmd)
        problems.append(CHECKED[tuple(cmd)])
    return [f"{block.where}: {p}" for p in problems if p]


def run_python(path: Path, where: Path) -> None:
    """Execute the unmarked python blocks of one doc in order, in one namespace, with `where` as the cwd."""
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    old = Path.cwd()
    os.chdir(where)
    try:
        for b in blocks(path):
            if b.lang == "python" and b.not_run is None:
                try:
                    exec(compile(b.text, b.where, "exec"), namespace)
                except Exception as e:
                    raise AssertionError(f"{b.where}: {type(e).__name__}: {e}") from e
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A temp dir whose results/ is a copy of the committed reference sweep's records."""
    d = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "experiments" / "reference" / "episodes", d / "results")
    return d


@pytest.mark.parametrize("path", [p for p in doc_files() if any(b.lang == "python" for b in blocks(p))],
                         ids=lambda p: p.name)
def test_python_blocks_run(path, workdir):
    run_python(path, workdir)


@pytest.mark.slow  # each Hydra command composes its config (~0.5-1 s): ~40 s for all the docs
@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.name)
def test_shell_commands_parse(path):
    problems = [p for b in blocks(path) if b.lang == "bash" and b.not_run is None for p in shell_problems(b)]
    assert not problems, "\n".join(problems)


def test_every_block_is_checked_or_marked():
    """Each block is python, shell or plain text (diagrams, tables of output); few are marked not run."""
    assert {b.lang for b in ALL} <= {"python", "bash", ""}, {b.lang for b in ALL}
    marked = [f"{b.where}: {b.not_run}" for b in ALL if b.not_run]
    assert len(marked) <= MAX_NOT_RUN, marked
    ours = [c for b in ALL if b.lang == "bash" for c in commands(b.text) if sdebench_command(c) or script_command(c)]
    assert len(ours) > 60  # the parser of shell blocks found the commands


def test_a_broken_block_fails(tmp_path, workdir):
    """The checks catch a misspelt key, option or subcommand, a missing script and a python block that raises."""
    doc = tmp_path / "bad.md"
    doc.write_text("```bash\nsdebench run select.famly=ttlcache\npython -m sdebench.generate --familes ttlcache\n"
                   "python -m sdebench.nope x && sdebench plan agent=orcale\npython experiments/gone.py\n"
                   "python experiments/bench_generate.py --scael large\n"
                   "sdebench run -m delivery=full,squashed agent=oracle select.family=ttlcache\n```\n\n"
                   "```python\nfrom sdebench import analysis, results\nresults.load('results')\n```\n")
    (block, py) = blocks(doc)
    problems = shell_problems(block)
    assert len(problems) == 6, problems
    assert "did you mean select.family?" in problems[0] and "exit 2" in problems[1]
    assert "no subcommand 'nope'" in problems[2] and "no such agent" in problems[3]
    assert "no script" in problems[4] and "exit 2" in problems[5]
    with pytest.raises(AssertionError, match="bad.md:10: AttributeError"):
        run_python(doc, workdir)
    assert py.lang == "python"


def test_commands_are_read_as_a_shell_would():
    text = ("apt-get update && pip install -e '.[dev]' && sdebench run agent=oracle   # a comment\n"
            "sweep=$(mktemp -d)\npython -m sdebench.run -m source=K \\\n    results_dir=\"$sweep/results\"\n"
            "python -m sdebench.generate --new-seed > seed.txt\n"
            "python -m sdebench.report results [more dirs] --out report &\n"
            "python -m sdebench.interop x --out y [--ids a,b] [-T k=v]\n")
    assert commands(text) == [["apt-get", "update"], ["pip", "install", "-e", ".[dev]"],
                              ["sdebench", "run", "agent=oracle"],
                              ["python", "-m", "sdebench.run", "-m", "source=K", "results_dir=/tmp/sweep/results"],
                              ["python", "-m", "sdebench.generate", "--new-seed"],
                              ["python", "-m", "sdebench.report", "results", "--out", "report"],
                              ["python", "-m", "sdebench.interop", "x", "--out", "y"]]
