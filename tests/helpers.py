"""Test helpers: load the project's own generators and build deliberately broken ones."""

from __future__ import annotations

from pathlib import Path

from sdebench.generation.generate import load_generator

ROOT = Path(__file__).resolve().parents[1]


def billing_spec(source: str, variant: int = 0):
    """The billing-rounding spec of one placement."""
    return load_generator(ROOT / "generators" / "billing_rounding.py").build(variant, source)


BROKEN_TEMPLATE = '''
import dataclasses
import random
from pathlib import Path

from sdebench.tasks.commits import Commit
from sdebench.generation.generate import load_generator

BASE = load_generator(Path({base!r}))


class Broken:
    family = {family!r}
    bottleneck = "knowledge-missing"
    variants = (0,)
    description = "a deliberately broken family"

    def build(self, variant, source):
        spec = dataclasses.replace(BASE.build(variant, source), family=self.family)
        commits = list(spec.commits)
{mutation}
        return spec


GENERATOR = Broken()
'''


def write_broken(directory: Path, family: str, mutation: str) -> Path:
    """Write a generator that builds billing-rounding and then applies `mutation` (indented code)."""
    directory.mkdir(parents=True, exist_ok=True)
    body = "\n".join("        " + line for line in mutation.strip("\n").splitlines())
    path = directory / (family.replace("-", "_") + ".py")
    path.write_text(BROKEN_TEMPLATE.format(base=str(ROOT / "generators" / "billing_rounding.py"), family=family, mutation=body))
    return path


IDENTITY = {"task_id": "t-v0-K", "family": "t", "variant": 0, "source": "K", "bottleneck": "knowledge-missing",
            "delivery": "memtool", "agent": "llm", "model": "m", "seed": 0}


def record(**fields):
    """An EpisodeRecord with a made-up identity, `fields` (flat names, as in `EpisodeRecord.flat`) overriding it
    (attempts may be plain dicts)."""
    from sdebench.runs.record import EpisodeRecord

    return EpisodeRecord.from_flat({**IDENTITY, **fields})
