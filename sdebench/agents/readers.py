"""The naive memory readers as reference agents: `reader-top1`, `reader-latest`, `reader-majority`.

Each applies one rule of `sdebench.generation.readers` (the rules are defined there, once) to the
memory a delivery shows any agent, and never receives an answer key:

- prompt additions: an injection (inject) is parsed back into its items; any other addition (the
  fact sentence under oracle) is one item;
- a `memory_search` tool (memtool): one search with the statement, the tool's default top-k, read
  as ranked results;
- otherwise the workspace itself (full, squashed): its history and its memory artifact files at
  HEAD, read through the shell (`git log` with dates, `git cat-file`) and turned into items the way
  the memory corpus is (`sdebench.delivery.memory.corpus_of`); under squashed that is one commit of
  code and no artifacts, so no memory.

The family's spec (public code, as the prober loads it: `sdebench.agents.families`) gives the
candidates, their spellings and the renderer: the agent writes the rendered fix of its pick and
submits. No candidate found: it submits without a change. After feedback it resubmits unchanged,
so an unresolved episode ends at the cap, like `conventional`.
"""

from __future__ import annotations

import os
from pathlib import Path

from sdebench import GENERATORS_DIR
from sdebench.agents.base import RunResult
from sdebench.agents.reference import ScriptedAgent

_READERS: dict[tuple[str, float, int], object] = {}  # memo: (module, mtime, variant) -> Readers


class ReaderAgent(ScriptedAgent):
    """Picks a candidate from memory with one naive rule (`reader`), applies it, submits."""

    name = "reader"
    reader = ""  # one of sdebench.generation.readers.READERS

    def __init__(self, generators: Path | None = None) -> None:
        super().__init__()
        self.generators = Path(generators) if generators else Path(GENERATORS_DIR)
        self.acted = False

    @classmethod
    def from_config(cls, cfg: dict) -> ReaderAgent:
        """Build from the agent's config: `agent.generators` (default: the project's)."""
        agent = cfg.get("agent") or {}
        return cls(agent.get("generators") or None)

    def _tool(self, name: str, args: dict):
        self._steps += 1
        return self.ctx.toolbox.call(name, args)

    def memory(self) -> tuple[list, list, bool]:
        """The items the delivery shows (items, their dates, whether they are ranked search results)."""
        from sdebench.delivery.memory import MemoryItem, corpus_of, parse_rendered

        items = []
        for n, text in enumerate(self.ctx.prompt_additions):
            items += parse_rendered(text) or [MemoryItem(f"prompt:{n}", "K", "prompt", text)]
        if "memory_search" in self.ctx.toolbox.names():
            res = self._tool("memory_search", {"query": self.ctx.statement})
            found = [] if res.error else parse_rendered(res.output)
            return items + found, [None] * (len(items) + len(found)), not items
        if items:
            return items, [None] * len(items), False
        from sdebench.agents.families import history_and_artifacts

        commits, files = history_and_artifacts(self._tool)
        items = corpus_of(commits, files)
        dates = [c.date[:10] or None for c in commits]
        return items, dates + [None] * (len(items) - len(dates)), False

    def _readers(self, gen, path: Path, variant: int):
        from sdebench.generation.probe import spellings_of
        from sdebench.generation.readers import Readers, candidates

        key = (str(path), os.stat(path).st_mtime, variant)
        if key not in _READERS:
            values = gen.space.values()
            _READERS[key] = Readers(candidates(values, [spellings_of(gen, variant, v) for v in values]))
        return _READERS[key]

    def run(self) -> RunResult:
        """First run: read memory, pick, write the pick's fix (none: no change), submit; later runs resubmit."""
        from sdebench.agents.families import identify
        from sdebench.generation.probe import render

        self._steps = 0
        if not self.acted:
            self.acted = True
            # A workspace matching no family raises: an episode error, never a silent "unresolved".
            gen, path, variant = identify(self.generators, self._tool)
            items, dates, ranked = self.memory()
            pick = self._readers(gen, path, variant).pick(self.reader, items, dates, self.ctx.statement, ranked)
            self.ctx.trajectory.log("agent_note", reader=self.reader, items=len(items), ranked=ranked,
                                    pick=None if pick is None else repr(pick.value))
            if pick is not None:
                for rel, content in sorted(render(gen, variant, pick.value).items()):
                    self._call("write_file", path=rel, content=content)
        return self._submit()


class TopOneReader(ReaderAgent):
    """`reader-top1`: the value of the statement's best search hit."""

    name = reader = "reader-top1"


class LatestReader(ReaderAgent):
    """`reader-latest`: the value of the most recently dated mention."""

    name = reader = "reader-latest"


class MajorityReader(ReaderAgent):
    """`reader-majority`: the value mentioned most often."""

    name = reader = "reader-majority"
