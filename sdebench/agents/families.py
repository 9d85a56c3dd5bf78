"""What the reference agents that know the families (prober, naive readers) read of them: which
family and variant a workspace shows, seen through the toolbox like anything an agent learns, and
the workspace's files and history read through its shell.

The family specs in `generators/` are public code: an agent may load them to know a family's fact
space, its spellings and its renderer, never the fact (no answer key is used). A family is
recognised by the HEAD of the files a fix touches (`render`'s paths): the workspace's tracked files
are listed once (`git ls-files`), and only the variants whose paths all exist are compared, file by
file, with `read_file`.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdebench.agents.base import ToolResult
from sdebench.errors import AgentError

Call = Callable[[str, dict[str, Any]], ToolResult]  # a toolbox call: (tool name, arguments) -> result
DUMP = ".git/reference-agent.out"  # scratch file in the workspace's git dir (never graded)
CHUNK = 11_000  # bytes per read: base64 of it stays under the tools' default 16,000-character output cap
# Memos per (module path, mtime[, variant]): the families a sweep's episodes share, the paths a fix
# touches and their content at HEAD.
_GENERATORS: dict[tuple, Any] = {}
_HEADS: dict[tuple, Any] = {}


class WorkspaceError(AgentError, RuntimeError):
    """The workspace could not be read through the toolbox (an error of the episode, not an outcome)."""


def stdout_of(res: ToolResult) -> str:
    """The stdout of a `bash` tool result (its text between `stdout:` and `stderr:`)."""
    if res.error:
        raise WorkspaceError(res.output[:300])
    m = re.search(r"^stdout:\n(.*?)(?:\nstderr:\n.*)?\Z", res.output, re.S | re.M)
    return m.group(1) if m else ""


def dump(call: Call, command: str) -> bytes:
    """The full stdout of a shell `command` in the workspace, read in base64 chunks that fit the
    tool's output cap (a chunk the tool truncated is read again at half the size)."""
    size = stdout_of(call("bash", {"command": f"{{ {command} ; }} > {DUMP} 2>/dev/null; wc -c < {DUMP}"})).strip()
    if not size.isdigit():
        raise WorkspaceError(f"cannot read the output of {command.split()[0]!r}: {size[:200]!r}")
    out, chunk, total = bytearray(), CHUNK, int(size)
    try:
        while len(out) < total:
            text = stdout_of(call("bash", {"command": f"tail -c +{len(out) + 1} {DUMP} | head -c {chunk} | base64 -w0"}))
            try:
                piece = base64.b64decode(text.strip(), validate=True)
            except ValueError:
                piece = b""
            if not piece or (len(piece) < chunk and len(out) + len(piece) < total):
                if chunk <= 256:
                    raise WorkspaceError(f"cannot read the output of {command.split()[0]!r} in chunks")
                chunk //= 2
                continue
            out += piece
    finally:
        call("bash", {"command": f"rm -f {DUMP}"})
    return bytes(out)


def tracked_files(call: Call) -> set[str]:
    """The paths of the workspace's tracked files."""
    return {p for p in dump(call, "git ls-files -z").decode(errors="replace").split("\0") if p}


def _generator(path: Path) -> Any:
    """The family a spec module defines (memoised per module version: a sweep's episodes share it)."""
    from sdebench.generation.generate import load_generator

    key = (str(path), path.stat().st_mtime)
    if key not in _GENERATORS:
        _GENERATORS[key] = load_generator(path)
    return _GENERATORS[key]


def _paths(gen: Any, path: Path, variant: int) -> list[str]:
    """The paths a fix of `variant` touches (memoised)."""
    from sdebench.generation.probe import render

    key = ("paths", str(path), path.stat().st_mtime, variant)
    if key not in _HEADS:
        _HEADS[key] = sorted(render(gen, variant, gen.space.values()[0]))
    return _HEADS[key]


def _head(gen: Any, path: Path, variant: int) -> dict[str, str | None]:
    """Those paths' content at the variant's HEAD (memoised; building a variant may take a second)."""
    from sdebench.generation.validate import head_tree

    key = ("head", str(path), path.stat().st_mtime, variant)
    if key not in _HEADS:
        head = head_tree(gen.build(variant, "none", fact=gen.space.values()[0]))
        _HEADS[key] = {p: head.get(p) for p in _paths(gen, path, variant)}
    return _HEADS[key]


def identify(generators: Path, call: Call, count: Callable[[], None] = lambda: None) -> tuple[Any, Path, int]:
    """The family (declaring a fact space) and variant whose HEAD the workspace shows, its module path;
    ValueError if none matches. `count` is called once per tool call made."""
    from sdebench.generation.generate import GeneratorError
    from sdebench.generation.probe import declares_space

    count()
    present = tracked_files(call)
    read: dict[str, str | None] = {}
    for path in sorted(p for p in Path(generators).glob("*.py") if not p.name.startswith("_")):
        try:
            gen = _generator(path)
        except GeneratorError:  # a broken spec is no family to recognise
            continue
        if not declares_space(gen):
            continue
        for v in gen.variants:
            paths = _paths(gen, path, v)
            if not all(p in present for p in paths):
                continue
            head = _head(gen, path, v)
            ok = True
            for p in paths:
                if p not in read:
                    res = call("read_file", {"path": p})
                    count()
                    read[p] = None if res.error else res.output
                if read[p] != head[p]:
                    ok = False
                    break
            if ok:
                return gen, path, v
    raise ValueError(f"the workspace matches no family declaring a fact space in {generators}")


def history_and_artifacts(call: Call) -> tuple[list, dict[str, str]]:
    """The workspace's history (as `sdebench.tasks.repo.history` reads it, dates included) and its
    memory artifact files at HEAD, read through the shell."""
    from sdebench.tasks import repo
    from sdebench.tasks.artifacts import artifact_kind

    commits = repo.parse_history(dump(call, "git " + " ".join(shlex.quote(a) for a in repo.HISTORY_ARGS)))
    listing = dump(call, "git ls-tree -r -z --name-only HEAD").decode(errors="replace").split("\0")
    paths = sorted(p for p in listing if p and artifact_kind(p) is not None)
    if not paths:
        return commits, {}
    names = " ".join(shlex.quote(f"HEAD:{p}") for p in paths)
    raw = dump(call, f"printf '%s\\n' {names} | git cat-file --batch")
    return commits, dict(zip(paths, _batch_contents(raw, len(paths)), strict=True))


def _batch_contents(raw: bytes, n: int) -> list[str]:
    """The object contents in the output of `git cat-file --batch` (n objects; a missing one is '')."""
    out, i = [], 0
    for _ in range(n):
        end = raw.index(b"\n", i)
        header = raw[i:end].split()
        i = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            out.append(raw[i:i + size].decode(errors="replace"))
            i += size + 1
        else:
            out.append("")
    return out
