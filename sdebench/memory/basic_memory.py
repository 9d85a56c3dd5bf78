"""basic-memory (a local-first notes vault: markdown files its own MCP server indexes) as a memory backend.

`load` writes one markdown note per memory item into `<state>/notes` (one folder per source:
history/, knowledge/, feedback/, experience/; the item's source letter and id in the frontmatter),
points basic-memory's config dir, database and home at dirs under `state`, starts `basic-memory mcp`
over stdio and waits until the server's own search counts every note. The agent gets the server's
search and read tools under their own names and descriptions, and its note-writing tool when
`write=True`. Each answer's items are the memory items whose permalinks it shows, in order.

Offline by config: semantic search (fastembed, whose model would be downloaded) is off in the
config file the backend writes, so search is basic-memory's SQLite FTS5 keyword search; its
self-update, FastMCP's update check and the promos are off too. Nothing touches the real HOME.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdebench.agents.installed.install import InstallError
from sdebench.delivery.backend import (
    READ,
    SEARCH,
    WRITE,
    Answer,
    LoadReport,
    MemoryCallError,
    MemoryLoadError,
    MemoryTool,
)
from sdebench.delivery.memory import MemoryItem
from sdebench.memory.mcp_stdio import McpProcess

SYSTEM = "basic-memory"
PROJECT = "main"
FOLDERS = {"H": "history", "K": "knowledge", "F": "feedback", "X": "experience"}
# The server's tools the agent gets: name -> (kind, the argument naming what is searched or read).
READ_TOOLS: dict[str, tuple[str, str | None]] = {
    "search_notes": (SEARCH, "query"),
    "read_note": (READ, "identifier"),
    "build_context": (READ, "url"),
}
WRITE_TOOLS: dict[str, tuple[str, str | None]] = {"write_note": (WRITE, None)}
PAGE_ARGS = (
    "page_size",
    "limit",
    "per_page",
)  # how search_notes takes its number of results (and its aliases)
TITLE_MAX = 120
POLL_S = 0.25
# A permalink of a loaded note as the server prints it (alone, in a memory:// URL, a file path or an
# observation's permalink); only the ones load wrote map back to items.
_PERMALINK = re.compile(r"(?<![A-Za-z0-9_.-])((?:" + "|".join(FOLDERS.values()) + r")/[a-z0-9-]+)")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "item"


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300]}" if text else type(e).__name__


@dataclass
class Note:
    """The note one memory item becomes."""

    item: MemoryItem
    path: str  # relative to the notes dir
    permalink: str
    title: str

    def render(self) -> str:
        """The markdown file: frontmatter (title, type, permalink, tags, source, memory id), then the item's text."""
        folder = FOLDERS[self.item.source]
        front = [
            "---",
            f"title: {json.dumps(self.title)}",
            "type: note",
            f"permalink: {self.permalink}",
            f"tags: [{folder}]",
            f"source: {self.item.source}",
            f"memory_id: {json.dumps(self.item.id)}",
            "---",
        ]
        return "\n".join(front) + "\n\n" + self.item.text.rstrip("\n") + "\n"


def notes_of(items: list[MemoryItem]) -> list[Note]:
    """One note per item: a unique title (the item's, with its id when another item has the same) and permalink."""
    titles = [(it.title.strip().splitlines() or [it.id])[0][:TITLE_MAX].strip() or it.id for it in items]
    seen_titles = Counter(titles)
    notes: list[Note] = []
    taken: set[str] = set()
    for it, title in zip(items, titles, strict=True):
        if it.source not in FOLDERS:
            raise MemoryLoadError(f"memory item {it.id} has an unknown source {it.source!r}")
        base = f"{FOLDERS[it.source]}/{_slug(it.id.split(':', 1)[-1])}"
        permalink, n = base, 1
        while permalink in taken:  # two ids that slug alike
            n += 1
            permalink = f"{base}-{n}"
        taken.add(permalink)
        notes.append(
            Note(it, f"{permalink}.md", permalink, title if seen_titles[title] == 1 else f"{title} ({it.id})")
        )
    return notes


@dataclass
class BasicMemory:
    """basic-memory's MCP server over a notes vault of the task's memory items."""

    name: str = SYSTEM
    write: bool = False  # also offer its note-writing tool
    cache_dir: str | None = None  # install cache (default: $SDEBENCH_AGENT_CACHE or /var/tmp/sdebench-agents)
    timeout_s: float = 600.0  # bounds starting the server plus indexing every note, and each call
    install: bool = True  # install the pinned release when missing (else a missing install fails the load)
    command: tuple[str, ...] | None = None  # the server's argv instead of the installed `basic-memory mcp`
    _proc: McpProcess | None = field(default=None, repr=False)
    _tools: tuple[MemoryTool, ...] = field(default=(), repr=False)
    _ids: dict[str, str] = field(default_factory=dict, repr=False)  # permalink -> memory item id
    _state: Path | None = field(default=None, repr=False)

    def _argv(self) -> list[str]:
        from sdebench.memory import install

        if self.command:
            return list(self.command)
        try:
            exe = (
                install.entry(SYSTEM, self.cache_dir)
                if self.install
                else install.find_installed(SYSTEM, self.cache_dir)
            )
        except InstallError as e:
            raise MemoryLoadError(f"{SYSTEM} could not be installed: {_one_line(e)}") from None
        if exe is None:
            spec = install.SYSTEMS[SYSTEM]
            raise MemoryLoadError(
                f"{SYSTEM} {spec.version} is not installed (python -m sdebench.memory.install {SYSTEM})"
            )
        return [str(exe), "mcp", "--project", PROJECT]

    def load(self, items: list[MemoryItem], state: Path) -> LoadReport:
        """Write the notes under `state`, start the server on them and wait until it has indexed every one."""
        from sdebench.memory.install import SYSTEMS

        self.close()
        self._ids = {}
        argv = self._argv()
        start = time.monotonic()
        state = Path(state).resolve()
        notes_dir, config_dir, home = state / "notes", state / "config", state / "home"
        notes = notes_of(items)
        try:
            # a load holds exactly these items, whatever an earlier load into `state` left
            for d in (notes_dir, config_dir):
                if d.is_dir():
                    shutil.rmtree(d)
            for d in (notes_dir, config_dir, home):
                d.mkdir(parents=True, exist_ok=True)
            for note in notes:
                path = notes_dir / note.path
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(note.render(), encoding="utf-8")
            (config_dir / "config.json").write_text(json.dumps(self._config(notes_dir), indent=2) + "\n")
        except OSError as e:
            raise MemoryLoadError(f"{SYSTEM}: could not write its notes or config: {_one_line(e)}") from None
        proc = McpProcess(
            argv, state / "server", self._env(config_dir, notes_dir, home), timeout=self.timeout_s
        )
        proc.start()  # MemoryLoadError (with the server's last stderr line) if it does not come up
        self._proc, self._state = proc, state
        try:
            self._tools = self._declared_tools()
            stored = self._wait_indexed(len(notes), start + self.timeout_s)
            self._ids = {n.permalink: n.item.id for n in notes}
        except BaseException as e:
            self.close()
            if isinstance(e, MemoryLoadError) or not isinstance(e, Exception):
                raise
            raise MemoryLoadError(f"{SYSTEM} failed while loading: {_one_line(e)}") from None
        version = None if self.command else SYSTEMS[SYSTEM].version
        return LoadReport(
            self.name,
            len(items),
            stored,
            time.monotonic() - start,
            version=version,
            extra={"search": "keyword (SQLite FTS5); semantic search off", "write": self.write},
        )

    @staticmethod
    def _config(notes_dir: Path) -> dict[str, Any]:
        # Its config file, in the config dir the env points at: the one project, and every switch that
        # would reach the network off (semantic search embeds with a downloaded fastembed model).
        return {
            "projects": {PROJECT: {"path": str(notes_dir), "mode": "local"}},
            "default_project": PROJECT,
            "semantic_search_enabled": False,
            "auto_update": False,
            "cloud_promo_opt_out": True,
            "logfire_enabled": False,
        }

    @staticmethod
    def _env(config_dir: Path, notes_dir: Path, home: Path) -> dict[str, str]:
        return {
            "HOME": str(home),  # anything it writes "at home" stays in the state dir
            "BASIC_MEMORY_CONFIG_DIR": str(config_dir),  # config.json, the SQLite database, its log
            "BASIC_MEMORY_HOME": str(notes_dir),
            "BASIC_MEMORY_NO_PROMOS": "1",
            "FASTMCP_CHECK_FOR_UPDATES": "off",  # FastMCP asks PyPI for a newer release at start otherwise
            "FASTMCP_SHOW_SERVER_BANNER": "false",
            "HF_HUB_OFFLINE": "1",  # a model fetch fails at once instead of trying the network
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }

    def _declared_tools(self) -> tuple[MemoryTool, ...]:
        declared = {t["name"]: t for t in self._proc.tools()}
        wanted = {**READ_TOOLS, **(WRITE_TOOLS if self.write else {})}
        missing = [n for n in wanted if n not in declared]
        if missing:
            raise MemoryLoadError(f"{SYSTEM} declares no {', '.join(missing)} tool")
        return tuple(
            MemoryTool(n, declared[n]["description"], declared[n]["input_schema"], kind, arg)
            for n, (kind, arg) in wanted.items()
        )

    def _indexed(self) -> int | None:
        """How many loaded notes the server's search index holds (a filter-only search_notes), None if unknown."""
        text, is_error, _ = self._proc.call(
            "search_notes",
            {"metadata_filters": {"source": {"$in": list(FOLDERS)}}, "page_size": 1, "output_format": "json"},
        )
        if is_error:
            return None
        try:
            return int(json.loads(text)["total"])
        except (ValueError, KeyError, TypeError):
            return None

    def _wait_indexed(self, want: int, deadline: float) -> int:
        # The server indexes the notes dir in the background after it starts: poll its own count.
        seen: int | None = None
        while True:
            seen = self._indexed()
            if seen is not None and seen >= want:
                return seen
            if time.monotonic() >= deadline:
                raise MemoryLoadError(
                    f"{SYSTEM} indexed {seen if seen is not None else 'an unknown number of'} "
                    f"of {want} notes within {self.timeout_s:g} s"
                )
            time.sleep(POLL_S)

    def tools(self) -> tuple[MemoryTool, ...]:
        """search_notes, read_note, build_context (and write_note with `write`), as the server declares them."""
        return self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        """Run one of the offered tools on the server; the answer's items are the loaded notes it shows, in order."""
        if self._proc is None:
            raise RuntimeError(f"{SYSTEM} is not running")
        tool = next((t for t in self._tools if t.name == name), None)
        if tool is None:
            raise MemoryCallError(f"unknown memory tool {name!r}")
        arguments = dict(arguments or {})
        text, is_error, _ = self._proc.call(name, arguments)
        if self._state is not None:  # an error that names a file must not show where the episode lives
            text = text.replace(str(self._state), ".")
        asked = self._asked(tool, arguments) if tool.kind == SEARCH and not is_error else None
        return Answer(text, self.items_in(text), is_error, asked=asked)

    @staticmethod
    def _asked(tool: MemoryTool, arguments: dict[str, Any]) -> int | None:
        """The number of results a search asked for: its page size as given, else the one its schema defaults to."""
        given = next((arguments[a] for a in PAGE_ARGS if arguments.get(a) is not None), None)
        if given is None:
            given = ((tool.parameters.get("properties") or {}).get("page_size") or {}).get("default")
        try:
            return max(1, int(given)) if given is not None and not isinstance(given, bool) else None
        except (TypeError, ValueError):
            return None

    def items_in(self, text: str) -> tuple[str, ...]:
        """The ids of the loaded notes whose permalinks `text` shows, first mention first."""
        found: dict[str, None] = {}
        for permalink in _PERMALINK.findall(text):
            item = self._ids.get(permalink)
            if item is not None:
                found.setdefault(item)
        return tuple(found)

    def holds(self) -> frozenset[str]:
        """Every item of the last successful load (each is one note the server indexed)."""
        return frozenset(self._ids.values())

    def close(self) -> None:
        """Stop the server (its state stays under the state dir); safe to call twice."""
        proc, self._proc, self._tools = self._proc, None, ()
        if proc is not None:
            proc.close()
