"""The fenced code blocks of README.md and docs/*.md, and the commands in their shell blocks.

A block the test cannot run here carries `<!-- not run: WHY -->` on the line before its fence.
A shell block is read as a shell would split it: `\\` continues a line, `#` starts a comment,
`&&`, `;`, `|` and a trailing `&` separate commands, `> FILE` is a redirection, `$VAR` and `$(...)`
stand for a path, and usage notation is left out (`[--opt VALUE]` groups, a bare `...`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = re.compile(r"<!-- not run: (?P<why>[^>]+?) -->\n$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<text>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text, and why it is not run (if marked)."""

    path: Path
    line: int
    lang: str
    text: str
    not_run: str | None = None

    @property
    def where(self) -> str:
        """`docs/x.md:12`, for messages."""
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one markdown file, in order."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()]
        mark = NOT_RUN.search(before[before.rfind("\n", 0, len(before) - 1) + 1 :])
        out.append(Block(path, before.count("\n") + 1, m.group("lang"), m.group("text"),
                         mark.group("why") if mark else None))
    return out


def _clean(line: str) -> str:
    line = re.sub(r"\$\([^)]*\)", "/tmp/sub", line)  # $(mktemp -d)
    line = re.sub(r"\$\{?(\w+)\}?", r"/tmp/\1", line)  # "$sweep/results"
    line = re.sub(r"(?<=\s)\[(?=[-\w ]*[- ])[^\]]*\]", " ", line)  # [--ids a,b], [more dirs]: usage notation
    return line


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block as argument lists (variable assignments and `export` left out)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        tokens = shlex.split(_clean(line), comments=True)
        cmd: list[str] = []
        for tok in [*tokens, ";"]:
            if tok in ("&&", "||", ";", "|", "&") or tok.endswith(";"):
                if tok.endswith(";") and tok != ";":
                    cmd.append(tok[:-1])
                out.append(cmd)
                cmd = []
            else:
                cmd.append(tok)
        out = [c for c in out if c]
    result = []
    for cmd in out:
        cmd = [t for t in cmd if t != "..."]
        # redirections: `> FILE`, `2>&1`
        cleaned, skip = [], False
        for t in cmd:
            if skip:
                skip = False
                continue
            if t in (">", ">>", "<", "2>"):
                skip = True
                continue
            if re.fullmatch(r"\d?>&\d", t):
                continue
            cleaned.append(t)
        while cleaned and re.fullmatch(r"[A-Za-z_]\w*=.*", cleaned[0]):  # VAR=value before a command
            cleaned = cleaned[1:]
        if cleaned and cleaned[0] not in ("export", "."):
            result.append(cleaned)
    return result


def sdebench_command(cmd: list[str]) -> tuple[str, list[str]] | None:
    """(subcommand, arguments) when `cmd` runs sdebench (`sdebench X`, `python -m sdebench[.X]`), else None."""
    if cmd[0] == "sdebench" and len(cmd) > 1:
        return cmd[1], cmd[2:]
    if cmd[0] in ("python", "python3") and len(cmd) > 2 and cmd[1] == "-m":
        if cmd[2] == "sdebench" and len(cmd) > 3:
            return cmd[3], cmd[4:]
        if cmd[2].startswith("sdebench."):
            return cmd[2].removeprefix("sdebench."), cmd[3:]
    return None


def script_command(cmd: list[str]) -> tuple[str, list[str]] | None:
    """(script path, arguments) when `cmd` runs one of the repository's `experiments/` scripts."""
    if cmd[0] in ("python", "python3") and len(cmd) > 1 and cmd[1].startswith("experiments/"):
        return cmd[1], cmd[2:]
    return None
