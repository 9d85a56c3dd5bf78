"""A family's words as one sheet: the statement, the commit messages and every memory entry.

Most of what a family tells is prose: the issue, the fact and the conventional guess, the messages
of the commits the kit lays out, and the memory entries (the fact's own, per source, and the
distractors every placement carries). `prose(sheet)` reads them from one text, written the way
the agent will read them, and returns the `Story` fields they fill: `Story(..., **prose(f'''...'''))`.

A sheet is a list of sections, each opened by a line `-- <what>`:

    -- statement | fact | conventional_guess | intro_msg_fact | intro_msg_plain | refactor_msg | repro_msg
                    that text field of the Story
    -- K <path>     the fact's entry in the knowledge artifact <path> (K placement only)
    -- F | -- X     the fact's entry in .agent/preferences.md (F) or .agent/past_fixes.md (X);
                    several sections of one source tell a fact in parts, one entry each
    -- <path>       a distractor entry of the artifact file <path>, in every placement

Text is soft-wrapped as in Markdown: the lines of a paragraph are joined with one space, except
after a heading (a line opening with `#`), which keeps its line break; paragraphs are separated by
one blank line. Every line starts at the indentation of the sheet's first `--` line and ends without
a space, so an f-string placeholder at a line's edge that renders empty (or with edge spaces) is an
error rather than a silently changed text: keep placeholders inside a line. An ADR entry that opens
with `# ADR-<n>` must be in the file `.../adr/<n>-*.md` of the same number. Anything malformed is a
ValueError naming the section.
"""

from __future__ import annotations

import re
from typing import Any

from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES, artifact_kind

FIELDS = ("statement", "fact", "conventional_guess", "intro_msg_fact", "intro_msg_plain", "refactor_msg", "repro_msg")
FACT_FILES = {"F": PREFERENCES, "X": PAST_FIXES}
_HEAD = re.compile(r"^\s*-- (.+?)\s*$")
_ADR_FILE = re.compile(r"(?:^|/)adr/0*(\d+)-[^/]*\.md$")
_ADR_TITLE = re.compile(r"^# ADR-0*(\d+)\b")


def prose(sheet: str) -> dict[str, Any]:
    """The Story fields a sheet fills: its text fields, `fact_entries` and `distractors`."""
    fields: dict[str, str] = {}
    facts: dict[str, list[tuple[str, str]]] = {}
    distractors: list[tuple[str, str]] = []
    for head, lines in _sections(sheet):
        text = unwrap(lines, head)
        if not text:
            raise ValueError(f"prose: section '-- {head}' is empty")
        word, _, rest = head.partition(" ")
        if head in FIELDS:
            if head in fields:
                raise ValueError(f"prose: section '-- {head}' appears twice")
            fields[head] = text
        elif word in ("K", "F", "X"):
            if (word == "K") != bool(rest):
                raise ValueError(f"prose: '-- {head}': K names its artifact file (`-- K docs/...`), F and X do not")
            facts.setdefault(word, []).append((_artifact(rest, head) if rest else FACT_FILES[word], text))
        else:
            distractors.append((_artifact(head, head), text))
        _check_adr(head, text)
    out: dict[str, Any] = dict(fields)
    if facts:
        out["fact_entries"] = {k: v[0] if len(v) == 1 else v for k, v in facts.items()}
    if distractors:
        out["distractors"] = distractors
    return out


def unwrap(lines: list[str], head: str = "") -> str:
    """A section's lines (without their indentation) as text: paragraphs joined by a blank line,
    their lines by a space (a heading line keeps its line break)."""
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if not line.strip():
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        if line[:1].isspace() or line[-1:].isspace():
            raise ValueError(f"prose: '-- {head}': a line starts or ends with a space beyond the sheet's "
                             f"indentation (a placeholder at a line's edge?): {line.strip()[:60]!r}")
        paragraphs[-1].append(line)
    out = []
    for para in (p for p in paragraphs if p):
        text = para[0]
        for before, line in zip(para, para[1:], strict=False):
            text += ("\n" if before.startswith("#") else " ") + line
        out.append(text)
    return "\n\n".join(out)


def _sections(sheet: str) -> list[tuple[str, list[str]]]:
    """(head, lines without the sheet's indentation) of every section."""
    sections: list[tuple[str, list[str]]] = []
    indent = None
    for line in sheet.splitlines():
        m = _HEAD.match(line)
        if m:
            indent = line[:len(line) - len(line.lstrip())] if indent is None else indent
            if not line.startswith(indent + "--"):
                raise ValueError(f"prose: section '-- {m.group(1)}' is not at the sheet's indentation")
            sections.append((m.group(1), []))
        elif indent is None:
            if line.strip():
                raise ValueError(f"prose: text before the first section: {line.strip()[:60]!r}")
        elif line.strip() and not line.startswith(indent):
            raise ValueError(f"prose: '-- {sections[-1][0]}': a line is indented less than the sheet: "
                             f"{line.strip()[:60]!r}")
        else:
            sections[-1][1].append(line[len(indent):])
    return sections


def _artifact(path: str, head: str) -> str:
    if " " in path or artifact_kind(path) is None:
        raise ValueError(f"prose: unknown section '-- {head}' (a Story text field, K <path>, F, X, or an artifact "
                         "file's path)")
    return path


def _check_adr(head: str, text: str) -> None:
    path = head.split(" ", 1)[-1]
    title, file = _ADR_TITLE.match(text), _ADR_FILE.search(path)
    if title and file and int(title.group(1)) != int(file.group(1)):
        raise ValueError(f"prose: '-- {head}' holds ADR-{int(title.group(1)):04d} in the file of "
                         f"ADR-{int(file.group(1)):04d}")
