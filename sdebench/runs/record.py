"""The episode record: one typed, nested, versioned record per episode, built once by the episode
loop and read by every reader (the summary engine, results, analysis, report, findings, streams,
interop).

A record is sections of typed dataclasses: `identity` (what names the episode and its task set),
`outcome`, `attempts` (one per grade), `usage` (effort and cost), `timing`, `delivery` (what the
delivery reported), `retrieval` (sdebench.runs.retrieval), `stream` (the position in a stream, None
outside one) and `storage` (where and under which key it was written).

On disk a record is one JSON object with `schema_version` 3 and one object per section. Versions 1
and 2 were flat (every field at top level; version 1 is marked `"schema": "sdebench.episode/1"`):
they load into the same typed record, each flat field going to the section that holds a field of
its name (`delivery_info` to `delivery`). Every leaf field has one name, unique over the sections,
so `EpisodeRecord.flat()` gives the flat view (the columns of `sdebench.runs.results.frame`) and a
field can be named by its leaf name or by `section.leaf` (`FIELDS`). Keys no version knows are kept
in `extra` and written back unchanged. Every field is described in docs/records.md.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Union

from sdebench.errors import RunError
from sdebench.grading.options import DEFAULT_FEEDBACK
from sdebench.runs.retrieval import Retrieval

DEFAULT_MAX_INTERVENTIONS = 5  # the cap of failing grades fed back, when none is configured (and of version 1 records)

if TYPE_CHECKING:
    from sdebench.agents.base import Usage as ModelUsage

SCHEMA_VERSION = 3
LEGACY_SCHEMA = "sdebench.episode/1"  # how version 1 records mark themselves


class RecordError(RunError, ValueError):
    """JSON that is not an episode record this version can read (the message says why)."""


@dataclass(frozen=True)
class Identity:
    """What names an episode: the task (and its metadata), delivery, agent, model, seed and task set."""

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
    set_digest: str | None = None  # the task set: digest of a fresh private set's seed (None: the published set)
    memory_scale: str | None = None  # the task set's memory scale (`generate --scale`; None: as the families emit it)
    memory: str | None = None  # the memory system behind the delivery's tool (memtool: bm25, kg, ...; None: no memory system)


@dataclass(slots=True)
class Outcome:
    """How the episode ended: resolved or not, after how many interventions, and why it stopped."""

    resolved: bool = False  # every FAIL_TO_PASS, PASS_TO_PASS and HIDDEN_TO_PASS test passed
    interventions: int = 0  # failing grades fed back to the agent (0 if resolved at the first submit)
    resolved_at: int | None = None  # the submit (1-based attempt) that resolved; None if unresolved
    max_interventions: int | None = None  # the cap in force (None in early version 1 records: 5)
    feedback_hidden: str = DEFAULT_FEEDBACK  # the grading feedback policy in force: binary | counts | tests
    # resolved | max_interventions | a limit (max_turns, max_cost, max_wall, ...) | agent_error | gave_up | error
    # (agent_error: an unresolved outcome; error: none, see docs/records.md)
    stop_reason: str = "error"
    error: str | None = None  # what went wrong when stop_reason is error (or the agent reported one)
    feedback: list[str] = field(default_factory=list)  # the texts fed back, in order
    final_diff: str = ""  # the diff of the last graded workspace against HEAD (git format)


@dataclass(slots=True)
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
    def from_dict(cls, d: Any) -> Attempt:
        """An attempt from its JSON object; a missing or mistyped field is a RecordError."""
        return _build(cls, d, "attempt")


@dataclass(slots=True)
class EpisodeUsage:
    """Effort and cost: turns, tool calls, model calls and tokens."""

    turns: int = 0  # agent turns over all runs (model replies, or scripted steps)
    tool_calls: dict[str, int] = field(default_factory=dict)  # tool name -> calls
    tool_errors: int = 0  # rejected tool calls
    model_calls: int = 0  # model replies charged
    prompt_tokens: int = 0  # input tokens, cached ones included
    completion_tokens: int = 0
    cached_tokens: int = 0  # input tokens read from the prompt cache
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(slots=True)
class Timing:
    """Seconds: wall_s covers the whole episode; the others are its parts and add up to it."""

    wall_s: float = 0.0
    setup_s: float = 0.0  # delivery, sandbox and agent set-up
    model_s: float = 0.0  # waiting for the model, retries included
    tools_s: float = 0.0
    grading_s: float = 0.0
    other_s: float = 0.0  # the remainder: wall_s - (setup_s + model_s + tools_s + grading_s), the agent's own work and the loop


@dataclass(slots=True)
class DeliveryReport:
    """What the delivery reported (None: the mode does not report it); `other` keeps keys a custom mode adds."""

    corpus_items: int | None = None  # memory items in the corpus (memtool, inject)
    default_k: int | None = None  # hits a search returns by default (memtool)
    inject_tokens: int | None = None  # tokens pushed into the prompt (inject)
    inject_mode: str | None = None  # whole | top_k (inject)
    inject_items: int | None = None  # items pushed (inject)
    carried_items: int | None = None  # stream memory received
    carried_tokens: int | None = None
    carried_delivered: bool | None = None  # whether the mode showed the carried memory
    # how the corpus entered the memory system (memtool; sdebench.delivery.backend.LoadReport): backend, items,
    # stored, seconds, llm_calls, tokens, cost_usd, version
    memory_load: dict[str, Any] | None = None
    # what the agent wrote with the memory system's write tools (memory.write=true): per call, its tool and text
    memory_written: list[dict[str, Any]] | None = None
    # calls the memory system failed during the episode (the agent's outcome stands: its calls reach the system)
    memory_failures: list[str] | None = None
    other: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, info: dict[str, Any]) -> DeliveryReport:
        """The report of a delivery's `info` dict (sdebench.delivery.modes.Prepared.info)."""
        known = {f.name for f in fields(cls)} - {"other"}
        d = {k: v for k, v in info.items() if k in known}
        return _build(cls, {**d, "other": {k: v for k, v in info.items() if k not in known}}, "delivery")

    def info(self) -> dict[str, Any]:
        """The reported keys as one dict (version 2's `delivery_info`): the fields set, then `other`."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)
                   if f.name != "other" and getattr(self, f.name) is not None}, **self.other}


@dataclass(slots=True)
class StreamPosition:
    """Where an episode sits in a stream (sdebench.runs.stream) and the carried memory it received."""

    stream_id: str | None = None  # stream name, carry setting and shuffle seed
    stream_position: int | None = None  # 0-based position in the stream
    stream_carry: str | None = None  # F | X | both | none
    stream_length: int | None = None
    memory_items: int | None = None  # carried entries this episode received
    memory_f: int | None = None
    memory_x: int | None = None
    memory_tokens: int | None = None  # their estimated tokens (chars / 4)
    memory_digest: str | None = None  # hash of the carried entries received


@dataclass(slots=True)
class Storage:
    """Where the record was written and under which key (set when written under a results dir)."""

    task_hash: str | None = None  # content hash of the task dir
    config_hash: str | None = None  # hash of the outcome-relevant config
    key: str | None = None  # the episode key (task hash, identity, config hash)
    trajectory: str | None = None  # absolute path of the trajectory JSONL when written
    workspace: str | None = None  # the kept workspace dir (keep_workspace=true), else None


# section name -> its class; `delivery`, `retrieval` and `stream` are filled only when they say something
SECTIONS: dict[str, type] = {"identity": Identity, "outcome": Outcome, "usage": EpisodeUsage, "timing": Timing,
                             "delivery": DeliveryReport, "stream": StreamPosition, "storage": Storage}
# Leaf fields of the flat view (versions 1 and 2, frame columns) -> their section. `delivery_info`,
# `attempts` and `retrieval` are whole sections under their flat name.
FLAT: dict[str, str] = {f.name: s for s, cls in SECTIONS.items() if s not in ("delivery",) for f in fields(cls)}
WHOLE = {"delivery_info": "delivery", "attempts": "attempts", "retrieval": "retrieval"}


def _leaf_types() -> dict[str, Any]:
    """Leaf field -> its type without None (`int` for `int | None`)."""
    out = {}
    for cls in SECTIONS.values():
        for name, tp in typing.get_type_hints(cls).items():
            optional = typing.get_origin(tp) in (Union, types.UnionType)
            out[name] = [a for a in typing.get_args(tp) if a is not type(None)][0] if optional else tp
    return out


LEAF_TYPES: dict[str, Any] = _leaf_types()


@dataclass(slots=True)  # a misspelt or flat field name fails loudly
class EpisodeRecord:
    """One episode: task x delivery x agent x seed, its outcome, effort, cost and time."""

    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION

    identity: Identity
    outcome: Outcome = field(default_factory=Outcome)
    attempts: list[Attempt] = field(default_factory=list)  # one per grade, in order
    usage: EpisodeUsage = field(default_factory=EpisodeUsage)
    timing: Timing = field(default_factory=Timing)
    delivery: DeliveryReport = field(default_factory=DeliveryReport)
    retrieval: Retrieval | None = None  # whether the decisive memory item reached the agent (None: not computed)
    stream: StreamPosition | None = None  # None outside a stream
    storage: Storage = field(default_factory=Storage)
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know, kept as they were

    @classmethod
    def start(cls, ident: Identity) -> EpisodeRecord:
        """An empty record (stop_reason error until the episode says otherwise) for `ident`."""
        return cls(identity=ident)

    @property
    def key(self) -> str | None:
        """The episode key (storage.key)."""
        return self.storage.key

    def count_tools(self, stats: dict[str, Any], own: dict[str, int] | None = None) -> None:
        """Take the toolbox's figures (sdebench.agents.tools.Toolbox.stats), with `own`: the tools an
        agent running its own program called besides (sdebench.agents.base.SandboxAgent.tool_calls)."""
        calls = dict(stats["tool_calls"])
        for name, n in (own or {}).items():
            calls[name] = calls.get(name, 0) + n
        self.usage.tool_calls = calls
        self.usage.tool_errors, self.timing.tools_s = stats["tool_errors"], stats["tools_s"]

    def count_usage(self, u: ModelUsage) -> None:
        """Take the agent's model usage."""
        us = self.usage
        us.prompt_tokens, us.completion_tokens, us.cached_tokens = u.prompt_tokens, u.completion_tokens, u.cached_tokens
        us.cost_usd, us.model_calls, self.timing.model_s = u.cost_usd, u.model_calls, u.model_s

    def close_times(self, wall_s: float) -> None:
        """Set the wall time and round its parts; `other_s` is the named remainder, so the parts add up to it."""
        t = self.timing
        t.wall_s = wall_s
        for k in ("wall_s", "setup_s", "model_s", "tools_s", "grading_s"):
            setattr(t, k, round(float(getattr(t, k)), 4))
        t.other_s = round(t.wall_s - (t.setup_s + t.model_s + t.tools_s + t.grading_s), 4)

    # --- views and serialisation ---------------------------------------------------------
    def flat(self) -> dict[str, Any]:
        """The flat view: every leaf field by its name (version 2's keys), `extra` keys beside them."""
        out: dict[str, Any] = {k: v for k, v in self.extra.items() if "." not in k}
        for s in ("identity", "outcome", "usage", "timing", "storage"):
            out.update(_plain(getattr(self, s)))
        out.update(_plain(self.stream) if self.stream is not None else {f.name: None for f in fields(StreamPosition)})
        out["attempts"] = [asdict(a) for a in self.attempts]
        out["delivery_info"] = self.delivery.info()
        out["retrieval"] = self.retrieval.to_dict() if self.retrieval is not None else None
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this record: `schema_version` 3, one object per section, `extra` keys where they were."""
        d: dict[str, Any] = {s: _plain(getattr(self, s)) for s in ("identity", "outcome", "usage", "timing", "storage")}
        d["attempts"] = [asdict(a) for a in self.attempts]
        d["delivery"] = self.delivery.info()
        d["retrieval"] = self.retrieval.to_dict() if self.retrieval is not None else None
        d["stream"] = _plain(self.stream) if self.stream is not None else None
        for k, v in self.extra.items():  # `section.key`: an unknown key inside a section
            section, dot, leaf = k.partition(".")
            if dot and isinstance(d.get(section), dict):
                d[section].setdefault(leaf, v)
            elif not dot:
                d.setdefault(k, v)
        return {**d, "schema_version": SCHEMA_VERSION}

    def to_json(self) -> str:
        """The record as written to disk."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, default=str)

    @classmethod
    def from_dict(cls, d: Any) -> EpisodeRecord:
        """A record from its JSON object (version 1, 2 or 3); anything else is a RecordError."""
        if not isinstance(d, dict):
            raise RecordError(f"not a JSON object but {type(d).__name__}")
        version = version_of(d)
        data = {k: v for k, v in d.items() if k not in ("schema", "schema_version")}
        nested, extra = (_nest(data) if version < 3 else _split(data))
        return _record(nested, extra)

    @classmethod
    def from_flat(cls, d: dict[str, Any]) -> EpisodeRecord:
        """A record from its flat view (version 2's keys), e.g. one row of `results.frame`."""
        return cls.from_dict({**d, "schema_version": 2})

    def updated(self, **changes: Any) -> EpisodeRecord:
        """A copy with the fields named by their flat names (`resolved`, `key`, `stream_id`, ...) changed."""
        unknown = sorted(set(changes) - set(FLAT) - set(WHOLE))
        if unknown:
            raise RecordError(f"no record field {', '.join(map(repr, unknown))}")
        return EpisodeRecord.from_flat({**self.flat(), **changes})

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


# --- field names: the leaf name or `section.leaf`, one table for every reader ---------------------
def _field_names() -> dict[str, tuple[str, ...]]:
    """Every nameable field -> its path in the record (section, leaf)."""
    out: dict[str, tuple[str, ...]] = {}
    for leaf, section in FLAT.items():
        out[leaf] = out[f"{section}.{leaf}"] = (section, leaf)
    for f in fields(DeliveryReport):
        if f.name != "other":
            out[f"delivery.{f.name}"] = ("delivery", f.name)
    for f in fields(Retrieval):
        out[f"retrieval.{f.name}"] = ("retrieval", f.name)
    return out


FIELDS: dict[str, tuple[str, ...]] = _field_names()


def get(rec: EpisodeRecord, name: str) -> Any:
    """The value of field `name` (a leaf name or `section.leaf`, see FIELDS) in `rec`; KeyError if unknown."""
    section, leaf = FIELDS[name]
    part = getattr(rec, section)
    return None if part is None else getattr(part, leaf)


# --- reading -------------------------------------------------------------------------------------
def _plain(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _nest(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A flat (version 1 or 2) object split into sections, and the keys no section knows."""
    nested: dict[str, Any] = {s: {} for s in ("identity", "outcome", "usage", "timing", "storage", "stream")}
    extra: dict[str, Any] = {}
    for k, v in data.items():
        if k in FLAT:
            nested[FLAT[k]][k] = v
        elif k in WHOLE:
            nested[WHOLE[k]] = v
        else:
            extra[k] = v
    if isinstance(nested.get("delivery"), dict):
        nested["delivery"] = _delivery_fields(nested["delivery"])
    if all(v is None for v in nested["stream"].values()):
        nested["stream"] = None  # outside a stream
    return nested, extra


def _delivery_fields(info: dict[str, Any]) -> dict[str, Any]:
    known = {f.name for f in fields(DeliveryReport)} - {"other"}
    return {**{k: v for k, v in info.items() if k in known},
            "other": {k: v for k, v in info.items() if k not in known}}


def _split(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A version 3 object's sections, and the keys no version knows (`section.key` inside a section)."""
    known = {*SECTIONS, "attempts", "retrieval"}
    nested = {k: v for k, v in data.items() if k in known}
    extra = {k: v for k, v in data.items() if k not in known}
    if isinstance(nested.get("delivery"), dict):
        nested["delivery"] = _delivery_fields(nested["delivery"])
    for s, cls in SECTIONS.items():
        if s != "delivery" and isinstance(nested.get(s), dict):
            names = {f.name for f in fields(cls)}
            extra.update({f"{s}.{k}": v for k, v in nested[s].items() if k not in names})
            nested[s] = {k: v for k, v in nested[s].items() if k in names}
    return nested, extra


def _record(nested: dict[str, Any], extra: dict[str, Any]) -> EpisodeRecord:
    """The typed record of `nested` sections; a missing or mistyped field is a RecordError."""
    if "identity" not in nested:
        raise RecordError("record lacks section 'identity'")
    vals: dict[str, Any] = {}
    for name, tp in typing.get_type_hints(EpisodeRecord).items():
        if name in nested and name != "extra":
            vals[name] = _value(nested[name], tp, name)
    return EpisodeRecord(**vals, extra=extra)


def _build(cls: type, d: Any, where: str) -> Any:
    """An instance of the dataclass `cls` from the object `d`, every field type-checked."""
    if not isinstance(d, dict):
        raise RecordError(f"{where} must be an object, got {type(d).__name__}")
    if cls is Retrieval:
        try:
            return Retrieval.from_dict(d)
        except (TypeError, ValueError) as e:
            raise RecordError(f"field 'retrieval': {e}") from None
    hints = typing.get_type_hints(cls)
    vals = {}
    for f in fields(cls):
        if f.name not in d:
            if f.default is MISSING and f.default_factory is MISSING:
                raise RecordError(f"{where} lacks field {f.name!r}")
            continue
        vals[f.name] = _value(d[f.name], hints[f.name], f"{where}.{f.name}")
    return cls(**vals)


def _value(v: Any, tp: Any, path: str) -> Any:
    """`v` checked against the type `tp` (ints accepted for floats; bools only for bools); RecordError if not."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(v, inner, path)
    if is_dataclass(tp):
        return v if isinstance(v, tp) else _build(tp, v, path)  # a typed value (from_flat in code) is kept
    ok: bool
    if tp is Any:
        return v
    if tp is bool:
        ok = isinstance(v, bool)
    elif tp is int:
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif tp is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        v = float(v) if ok else v
    elif tp is str:
        ok = isinstance(v, str)
    elif origin is list:
        if not isinstance(v, list):
            raise RecordError(f"field {path!r} must be {_name(tp)}, got {type(v).__name__}")
        return [_value(x, args[0], f"{path}[{i}]") for i, x in enumerate(v)]
    elif origin is dict:
        if not isinstance(v, dict):
            raise RecordError(f"field {path!r} must be {_name(tp)}, got {type(v).__name__}")
        return {k: _value(x, args[1], f"{path}.{k}") for k, x in v.items()}
    else:
        ok = isinstance(v, tp)
    if not ok:
        raise RecordError(f"field {path!r} must be {_name(tp)}, got {type(v).__name__}")
    return v


def _name(tp: Any) -> str:
    """A type as written in this module: `int`, `list[Attempt]`, `dict[str, int]`."""
    args = typing.get_args(tp)
    if not args:
        return getattr(tp, "__name__", str(tp))
    return f"{typing.get_origin(tp).__name__}[{', '.join(_name(a) for a in args)}]"
