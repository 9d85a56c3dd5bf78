"""The prober: the best memoryless searcher, a reference agent for generation rule 7.

It knows the fact spaces and priors of the families (the specs in `generators/`), never the fact,
and no answer key. It recognises its family and variant from the workspace (through the toolbox:
the HEAD of the files a fix touches), renders every candidate, and learns how each would be judged against each
other by running them all once (`sdebench.generation.probe.variant_model`, cached on disk). Each
submit is the candidate most likely to resolve under the prior restricted to the hypotheses
consistent with every feedback so far; the feedback's form tells the policy in force.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from pathlib import Path

from sdebench import GENERATORS_DIR
from sdebench.agents.base import RunResult
from sdebench.agents.reference import ScriptedAgent
from sdebench.grading.options import DEFAULT_FEEDBACK

COUNT_RE = re.compile(r"Held-out tests: (\d+) of \d+ fail\.(?: (\d+) visible tests failed their held-out re-check\.)?")


def policy_of(text: str) -> str:
    """The feedback policy a grading feedback text was written under."""
    m = COUNT_RE.search(text)
    if m is None:
        return "binary"
    return "tests" if re.search(r"^- \S+::\S+$", text[m.end():], flags=re.M) else "counts"


def parse_feedback(text: str, policy: str, hidden: set[str]):
    """The feedback signature (as `probe.signature` computes it) of a grading feedback text."""
    from sdebench.generation.probe import signature

    if text.startswith("Resolved"):
        return None
    if policy == "binary":
        return "fail"
    m = COUNT_RE.search(text)
    if m is None:
        return ("unparsed",)
    if policy == "counts":
        return (int(m.group(1)), int(m.group(2) or 0))
    ids = re.findall(r"^- (\S+::\S+)$", text[m.end():], flags=re.M)
    return signature("tests", [i for i in ids if i in hidden], [i for i in ids if i not in hidden])


class ProberAgent(ScriptedAgent):
    """Submits the highest-posterior candidate of its family's fact space after every feedback."""

    name = "prober"

    def __init__(self, generators: Path, policy: str = DEFAULT_FEEDBACK, sandbox_cfg: dict | None = None,
                 cache_dir: Path | None = None) -> None:
        super().__init__()
        self.generators, self.policy = Path(generators), policy
        self.sandbox_cfg = sandbox_cfg or {"backend": "unsafe_local"}
        self.cache_dir = cache_dir
        self.vm = None
        self.prober = None
        self.submitted: int | None = None
        self.last_feedback: str | None = None

    @classmethod
    def from_config(cls, cfg: dict) -> ProberAgent:
        """Build from the agent's config: `agent.generators` (default: the project's), `agent.cache_dir`."""
        agent = cfg.get("agent") or {}
        cache = agent.get("cache_dir") or os.path.join(os.path.expanduser("~"), ".cache", "sdebench", "prober")
        return cls(Path(agent.get("generators") or Path(GENERATORS_DIR)), DEFAULT_FEEDBACK,
                   {"backend": "unsafe_local"}, Path(cache))

    def feedback(self, text: str) -> None:
        """Keep the feedback; it is applied to the hypotheses at the next run."""
        self.last_feedback = text

    def _family(self):
        """The declared family and variant whose HEAD the workspace shows (sdebench.agents.families)."""
        from sdebench.agents.families import identify

        def call(name, args):
            self._steps += 1
            return self.ctx.toolbox.call(name, args)

        return identify(self.generators, call)

    def _model(self, gen, path: Path, variant: int):
        from sdebench.generation.probe import variant_model

        digest = hashlib.sha256()
        for f in [path, *sorted((Path(__file__).resolve().parents[1] / "generation").glob("*.py"))]:
            digest.update(Path(f).read_bytes())
        digest.update(f"{gen.family}:{variant}".encode())
        cached = self.cache_dir / f"{digest.hexdigest()[:32]}.pkl" if self.cache_dir else None
        if cached and cached.is_file():
            try:
                return pickle.loads(cached.read_bytes())
            except Exception:  # noqa: BLE001 - a torn cache entry is rebuilt
                pass
        vm = variant_model(gen, variant, self.sandbox_cfg)
        if cached:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(vm))
            tmp.replace(cached)
        return vm

    def run(self) -> RunResult:
        """Update the hypotheses with the last feedback, write the best candidate, submit."""
        from sdebench.generation.probe import Prober

        self._steps = 0
        # A family without a space, or a workspace matching no variant, raises: an episode error,
        # never a silent "unresolved".
        if self.vm is None:
            gen, path, variant = self._family()
            self.vm = self._model(gen, path, variant)
        elif self.submitted is not None and self.last_feedback is not None:
            if self.prober is None or self.prober.policy != policy_of(self.last_feedback):
                self.prober = Prober(self.vm.model, policy_of(self.last_feedback))
                self.prober.alive = [h for h in self.prober.alive if h != self.submitted]
            sig = parse_feedback(self.last_feedback, self.prober.policy, set(self.vm.model.hidden))
            self.prober.observe(self.submitted, sig)
        if self.prober is None:
            self.prober = Prober(self.vm.model, self.policy)  # the first submit: no feedback yet
        c = self.prober.next()
        self.ctx.trajectory.log("agent_note", hypotheses=len(self.prober.alive), submit=c)
        if c is not None:  # no hypothesis left: resubmit unchanged
            self.submitted = c
            for rel, content in sorted(self.vm.renders[self.vm.model.members[c][0]].items()):
                self._call("write_file", path=rel, content=content)
        return self._submit()
