"""The episode record: one typed, versioned record per episode, as the episode loop builds it and
every reader (results, analysis, report, findings, streams, interop) reads it.

On disk a record is one JSON object with `schema_version` (2 now). Version 1 records (written
before the version field existed, marked `"schema": "sdebench.episode/1"`) load too: their fields
are the same, and the ones they lack (`max_interventions`, `feedback`, `grade_reused`, `competency`)
take the defaults below (a record without `competency` is of a recall task). Keys this version
does not know are kept in `extra` and written back unchanged, so a record from a newer minor
change is not silently cut down. Every field is described in docs/records.md.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from sdebench.errors import RunError
from sdebench.grading.options import DEFAULT_FEEDBACK
from sdebench.runs.retrieval import Retrieval

DEFAULT_MAX_INTERVENTIONS = 5  # the cap of failing grades fed back, when none is configured (and of version 1 records)

if TYPE_CHECKING:
    from sdebench.agents.base import Usage

SCHEMA_VERSION = 2
LEGACY_SCHEMA = "sdebench.episode/1"  # how version 1 records mark themselves


class RecordError(RunError, ValueError):
    """JSON that is not an episode record this version can read (the message says why)."""


@dataclass(frozen=True)
class Identity:
    """What names an episode: the task (and its metadata), delivery, agent, model and seed."""

    task_id: str
    family: str
    variant: int
    source: str
    bottleneck: str
    delivery: str
    agent: str
    model: str
    seed: int
    competency: str = "recall"  # how the task's fact must be worked out of memory (recall, or a hard competency)


@dataclass
class Attempt:
    """One graded submission of an episode."""

    attempt: int  # 1-based position among the episode's grades
    stop_reason: str  # why the agent's run before this grade ended: submitted, max_turns, ...
    turns: int  # agent turns in that run
    resolved: bool  # this grade resolved the task
    counts: dict[str, dict[str, int]]  # test group -> {"passed": n, "total": m}
    pass_ratio: float  # passed / total over all groups
    guards: list[str]  # guards the grade hit (e.g. "unchanged", "compile:pkg/a.py"); none: []
    grade_error: str | None  # why the grade could not run (an infrastructure error), else None
    grade_s: float  # seconds the grade took (0 when reused)
    grade_reused: bool = False  # a byte-identical resubmission reused the previous grade

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Attempt:
        """An attempt from its JSON object; a missing or mistyped field is a RecordError."""
        return cls(**_fields(cls, d, "attempt"))


@dataclass
class EpisodeRecord:
    """One episode: task x delivery x agent x seed, its outcome, effort, cost and time.

    The fields group as: identity (task_id ... seed, competency) and the task set (set_digest,
    memory_scale); outcome (resolved, interventions, max_interventions, stop_reason, error,
    attempts, feedback, final_diff); effort and cost (turns, tool_calls, tool_errors, model_calls,
    tokens, cost_usd); time (wall_s and its parts); delivery_info; retrieval; storage (task_hash,
    config_hash, key, trajectory, workspace); stream position (stream_* and memory_*, None outside
    a stream).
    """

    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION

    # identity (see Identity)
    task_id: str
    family: str
    variant: int
    source: str
    bottleneck: str
    delivery: str
    agent: str
    model: str
    seed: int
    competency: str = "recall"  # the task's competency (records written before it existed: recall); tier = recall | hard
    set_digest: str | None = None  # the task set: digest of a fresh private set's seed (None: the published set)
    memory_scale: str | None = None  # the task set's memory scale (`generate --scale`; None: as the families emit it)
    # outcome
    resolved: bool = False  # every FAIL_TO_PASS, PASS_TO_PASS and HIDDEN_TO_PASS test passed
    interventions: int = 0  # failing grades fed back to the agent (0 if resolved at the first submit)
    resolved_at: int | None = None  # the submit (1-based attempt) that resolved; None if unresolved
    max_interventions: int | None = None  # the cap in force (None in early version 1 records: 5)
    feedback_hidden: str = DEFAULT_FEEDBACK  # the grading feedback policy in force: binary | counts | tests
    # resolved | max_interventions | a limit (max_turns, max_cost, max_wall, ...) | agent_error | gave_up | error
    # (agent_error: an unresolved outcome; error: none, see docs/records.md)
    stop_reason: str = "error"
    error: str | None = None  # what went wrong when stop_reason is error (or the agent reported one)
    attempts: list[Attempt] = field(default_factory=list)  # one per grade, in order
    feedback: list[str] = field(default_factory=list)  # the texts fed back, in order
    final_diff: str = ""  # the diff of the last graded workspace against HEAD (git format)
    # effort and cost
    turns: int = 0  # agent turns over all runs (model replies, or scripted steps)
    tool_calls: dict[str, int] = field(default_factory=dict)  # tool name -> calls
    tool_errors: int = 0  # rejected tool calls
    model_calls: int = 0  # model replies charged
    prompt_tokens: int = 0  # input tokens, cached ones included
    completion_tokens: int = 0
    cached_tokens: int = 0  # input tokens read from the prompt cache
    cost_usd: float = 0.0
    # time, seconds (wall_s covers the whole episode; the others are its parts and add up to it)
    wall_s: float = 0.0
    setup_s: float = 0.0  # delivery, sandbox and agent set-up
    model_s: float = 0.0  # waiting for the model, retries included
    tools_s: float = 0.0
    grading_s: float = 0.0
    other_s: float = 0.0  # the remainder: wall_s - (setup_s + model_s + tools_s + grading_s), the agent's own work and the loop
    delivery_info: dict[str, Any] = field(default_factory=dict)  # what the delivery reported (corpus size, injected tokens, carried memory)
    retrieval: Retrieval | None = None  # whether the decisive memory item reached the agent (None: not computed, e.g. older records)
    # storage: set when the record is written under a results dir
    task_hash: str | None = None  # content hash of the task dir
    config_hash: str | None = None  # hash of the outcome-relevant config
    key: str | None = None  # the episode key (task hash, identity, config hash)
    trajectory: str | None = None  # absolute path of the trajectory JSONL when written
    workspace: str | None = None  # the kept workspace dir (keep_workspace=true), else None
    # stream position (sdebench.stream); None for episodes outside a stream
    stream_id: str | None = None  # stream name, carry setting and shuffle seed
    stream_position: int | None = None  # 0-based position in the stream
    stream_carry: str | None = None  # F | X | both | none
    stream_length: int | None = None
    memory_items: int | None = None  # carried entries this episode received
    memory_f: int | None = None
    memory_x: int | None = None
    memory_tokens: int | None = None  # their estimated tokens (chars / 4)
    memory_digest: str | None = None  # hash of the carried entries received
    # keys this version does not know, kept as they were
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(cls, ident: Identity) -> EpisodeRecord:
        """An empty record (stop_reason error until the episode says otherwise) for `ident`."""
        return cls(**asdict(ident))

    def count_tools(self, stats: dict[str, Any], own: dict[str, int] | None = None) -> None:
        """Take the toolbox's figures (sdebench.agents.tools.Toolbox.stats), with `own`: the tools an
        agent running its own program called besides (sdebench.agents.base.SandboxAgent.tool_calls)."""
        calls = dict(stats["tool_calls"])
        for name, n in (own or {}).items():
            calls[name] = calls.get(name, 0) + n
        self.tool_calls = calls
        self.tool_errors, self.tools_s = stats["tool_errors"], stats["tools_s"]

    def count_usage(self, u: Usage) -> None:
        """Take the agent's model usage."""
        self.prompt_tokens, self.completion_tokens, self.cached_tokens = u.prompt_tokens, u.completion_tokens, u.cached_tokens
        self.cost_usd, self.model_calls, self.model_s = u.cost_usd, u.model_calls, u.model_s

    def close_times(self, wall_s: float) -> None:
        """Set the wall time and round its parts; `other_s` is the named remainder, so the parts add up to it."""
        self.wall_s = wall_s
        for k in ("wall_s", "setup_s", "model_s", "tools_s", "grading_s"):
            setattr(self, k, round(float(getattr(self, k)), 4))
        self.other_s = round(self.wall_s - (self.setup_s + self.model_s + self.tools_s + self.grading_s), 4)

    def identity(self) -> Identity:
        """The fields naming this episode."""
        return Identity(**{f.name: getattr(self, f.name) for f in fields(Identity)})

    # --- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this record: `schema_version`, every field, and `extra` keys at top level."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        d["attempts"] = [asdict(a) for a in self.attempts]
        d["retrieval"] = self.retrieval.to_dict() if self.retrieval is not None else None
        return {**self.extra, **d, "schema_version": SCHEMA_VERSION}

    def to_json(self) -> str:
        """The record as written to disk."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, default=str)

    @classmethod
    def from_dict(cls, d: Any) -> EpisodeRecord:
        """A record from its JSON object (version 1 or 2); anything else is a RecordError."""
        if not isinstance(d, dict):
            raise RecordError(f"not a JSON object but {type(d).__name__}")
        version_of(d)  # versions 1 and 2 share their fields
        data = {k: v for k, v in d.items() if k not in ("schema", "schema_version")}
        known = {f.name for f in fields(cls)} - {"extra"}
        extra = {k: v for k, v in data.items() if k not in known}
        vals = _fields(cls, {k: v for k, v in data.items() if k in known}, "record")
        attempts = vals.get("attempts", [])
        if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
            raise RecordError("field 'attempts' must be a list of objects")
        vals["attempts"] = [Attempt.from_dict(a) for a in attempts]
        if vals.get("retrieval") is not None:
            try:
                vals["retrieval"] = Retrieval.from_dict(vals["retrieval"])
            except (TypeError, ValueError) as e:
                raise RecordError(f"field 'retrieval': {e}") from None
        return cls(**vals, extra=extra)

    @classmethod
    def from_json(cls, text: str) -> EpisodeRecord:
        """A record from the text of a record file."""
        try:
            data = json.loads(text)
        except ValueError as e:
            raise RecordError(f"not valid JSON ({e})") from None
        return cls.from_dict(data)


def version_of(d: dict[str, Any]) -> int:
    """The schema version of a record object; RecordError if it is not a record or is too new."""
    if "schema_version" in d:
        v = d["schema_version"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise RecordError(f"bad schema_version {v!r}")
        if v > SCHEMA_VERSION:
            raise RecordError(f"schema_version {v} is newer than this sdebench reads ({SCHEMA_VERSION})")
        return v
    if d.get("schema") == LEGACY_SCHEMA:
        return 1
    raise RecordError("not an episode record (no schema_version)")


# JSON types each annotation accepts; ints are accepted where floats are expected.
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "float": (float, int),
    "str | None": (str, type(None)),
    "int | None": (int, type(None)),
    "list[str]": (list,),
    "list[Attempt]": (list,),
    "dict[str, int]": (dict,),
    "dict[str, Any]": (dict,),
    "dict[str, dict[str, int]]": (dict,),
    "Retrieval | None": (dict, type(None)),
}


def _fields(cls: type, d: dict[str, Any], what: str) -> dict[str, Any]:
    """The values of `d` for the dataclass `cls`, type-checked; required fields must be present."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.name == "extra":
            continue
        required = f.default is MISSING and f.default_factory is MISSING
        if f.name not in d:
            if required:
                raise RecordError(f"{what} lacks field {f.name!r}")
            continue
        value = d[f.name]
        allowed = _TYPES.get(str(f.type), (object,))
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and bool not in allowed):
            raise RecordError(f"{what} field {f.name!r} must be {f.type}, got {type(value).__name__}")
        if str(f.type) == "float" and not is_bool:
            value = float(value)
        out[f.name] = value
    return out
