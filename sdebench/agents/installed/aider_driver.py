"""Runs aider inside the sandbox with its state kept out of the repository.

    python3 aider_driver.py --state-dir DIR -- AIDER-ARGS...

aider keeps its repo-map tag cache in `<repo>/.aider.tags.cache.v*`; in an episode that dir would
be part of the submitted diff. The driver points the cache at DIR (the agent's HOME) and then runs
aider's own `main` with the arguments unchanged.

One change to aider's behaviour, for the memory tool under memtool: with `--yes-always` aider runs
no shell command the model suggests (they need an explicit yes). A suggested command block made
only of `memory_search ...` lines is run (each as its own argv, never through a shell, so nothing
else can ride along) and its output goes back to the model as aider's own reflections do (lint or
file-mention messages, at most `max_reflections` per message). Every other command block is left
to aider. Copied into the sandbox next to the relay; imports only aider and the standard library.
"""

import argparse
import os
import shlex
import subprocess
import sys

MEMORY_COMMAND = "memory_search"


def memory_commands(block):
    """The argvs of a suggested command block if every line of it runs `memory_search`, else None."""
    argvs = []
    for line in block.strip().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            argv = shlex.split(line)
        except ValueError:
            return None
        if not argv or argv[0] != MEMORY_COMMAND:
            return None
        argvs.append(argv)
    return argvs or None


def run_memory_commands(coder, argvs):
    """Run `memory_search` argvs (no shell) and hand their output to the model as a reflection."""
    outputs = []
    for argv in argvs:
        shown = " ".join(shlex.quote(a) for a in argv)
        coder.io.tool_output("Running " + shown)
        try:
            out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=coder.root,
                                 text=True).stdout
        except OSError as e:  # no such command here (no memory in this episode)
            out = f"{MEMORY_COMMAND}: {e.strerror}\n"
        outputs.append(f"Output from {shown}\n{out}")
    text = "\n\n".join(outputs)
    coder.reflected_message = coder.reflected_message + "\n\n" + text if coder.reflected_message else text


def allow_memory_commands(coder_cls):
    """Make `coder_cls` run the `memory_search` blocks a reply suggests (each once: aider keeps a
    message's suggested blocks across its reflections) and leave every other block to aider."""
    original = coder_cls.run_shell_commands

    def run_shell_commands(self):
        if not self.suggest_shell_commands:
            return ""
        state = self.__dict__.setdefault("_memory_blocks", {"list": None, "done": 0})
        if state["list"] is not self.shell_commands:  # a new user message: a new list
            state["list"], state["done"] = self.shell_commands, 0
        blocks = self.shell_commands
        fresh = [memory_commands(b) for b in blocks[state["done"]:]]
        state["done"] = len(blocks)
        argvs = [a for argv_list in fresh if argv_list for a in argv_list]
        if argvs:
            run_memory_commands(self, argvs)
        self.shell_commands = [b for b in blocks if memory_commands(b) is None]
        try:
            return original(self)
        finally:
            self.shell_commands = blocks

    coder_cls.run_shell_commands = run_shell_commands


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("aider_args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    rest = args.aider_args[1:] if args.aider_args[:1] == ["--"] else args.aider_args

    from aider import main as aider_main
    from aider.coders.base_coder import Coder
    from aider.repomap import RepoMap

    allow_memory_commands(Coder)

    # pathlib joins an absolute path as itself: Path(root) / "/abs" == "/abs"
    RepoMap.TAGS_CACHE_DIR = os.path.join(args.state_dir, RepoMap.TAGS_CACHE_DIR)
    return aider_main.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
