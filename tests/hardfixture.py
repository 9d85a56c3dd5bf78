"""Test fixture: a minimal hard-tier family ("conflict-ttl"), the ttlcache story retold as a conflict.

Memory holds two dated statements about the cache lifetime: an accepted ADR of 2023-02-01 that
says 300 s three times, and, in the fact's source, a later one (2024-05-02) with the real TTL;
nothing labels the earlier one superseded. A past fix of 2024-06-10, about the cache warmer, mentions 600 s. So
`reader-top1` (the ADR is the best hit), `reader-majority` (300 s is said most often) and
`reader-latest` (600 s is the latest dated mention) all miss the fact, while the fact sentence
names it. `write_conflict_family(dir, warmer=False)` leaves the warmer note out: then the latest
dated mention is the fact's, and rule 8 must refuse the task.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEMPLATE = '''"""conflict-ttl: a test fixture of the hard tier (tests/hardfixture.py)."""

import dataclasses
import importlib.util
import sys

from sdebench.generation.family import Family
from sdebench.generation.kit import ADR_DIR
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

_spec = importlib.util.spec_from_file_location("sdebench_fixture_ttlcache_base", {base!r})
_base = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _base
_spec.loader.exec_module(_base)
BASE = _base.GENERATOR
WARMER = {warmer!r}


def tell(variant, ttl):
    """ttlcache's story with two dated, competing statements of the cache lifetime."""
    story = BASE.tell(variant, ttl)
    old = (f"{{ADR_DIR}}/0003-cache-ttl.md", "# ADR-0003: Cache lifetime\\n\\nStatus: Accepted (2023-02-01)\\n\\n"
           "Cached quotes and answers live 300 s: the cache keeps every cached entry 300 s, and a cached "
           "entry read after 300 s goes back to the provider.")
    kept = [d for d in story.distractors if not d[0].endswith("0003-cache-ttl.md") and "1800 s" not in d[1]]
    warmer = [(PAST_FIXES, "## Requests go back to the provider\\n2024-06-10: cached quotes and answers disappear "
                           "from the cache warmer, which re-reads every cached entry from the provider every 600 s.")]
    new = f"2024-05-02: cached quotes and answers now live {{ttl}} s (the provider's new contract)."
    return dataclasses.replace(
        story,
        competency="conflict",
        distractors=[*kept, old, *(warmer if WARMER else [])],
        fact_entries={{"K": (f"{{ADR_DIR}}/0007-cache-ttl-revisited.md", f"# ADR-0007: Cache lifetime\\n\\n{{new}}"),
                       "F": (PREFERENCES, f"- (review of #140) {{new}}"),
                       "X": (PAST_FIXES, f"## Throttled by the provider\\n{{new}}")}},
    )


GENERATOR = Family(family={family!r}, bottleneck="knowledge-missing", description="a test fixture",
                   variants=(0,), draw=BASE.draw, tell=tell, space=BASE.space)
'''


def write_conflict_family(directory: Path, family: str = "conflict-ttl", warmer: bool = True) -> Path:
    """Write the fixture family's generator module into `directory`; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (family.replace("-", "_") + ".py")
    path.write_text(TEMPLATE.format(base=str(ROOT / "generators" / "ttlcache.py"), family=family, warmer=warmer))
    return path
