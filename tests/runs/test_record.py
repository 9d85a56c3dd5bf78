"""The typed, nested, versioned episode record: round trips, version 1 and 2 records, unknown keys, bad input, docs."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from sdebench.runs import results
from sdebench.runs.record import (
    FIELDS,
    FLAT,
    SCHEMA_VERSION,
    SECTIONS,
    Attempt,
    EpisodeRecord,
    Identity,
    RecordError,
    StreamPosition,
    get,
)
from tests.helpers import record

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "experiments" / "reference" / "episodes"


def test_a_record_round_trips_through_its_nested_json():
    rec = record(resolved=True, stop_reason="resolved", stream_id="s:both", stream_position=2, feedback=["no"],
                 delivery_info={"inject_tokens": 120, "custom": [1]},
                 attempts=[{"attempt": 1, "stop_reason": "submitted", "turns": 2, "resolved": True, "counts": {},
                            "pass_ratio": 1, "guards": [], "grade_error": None, "grade_s": 0.5}])
    assert isinstance(rec.attempts[0], Attempt) and rec.attempts[0].pass_ratio == 1.0 and not rec.attempts[0].grade_reused
    assert rec.stream == StreamPosition(stream_id="s:both", stream_position=2)
    assert rec.delivery.inject_tokens == 120 and rec.delivery.other == {"custom": [1]}
    d = json.loads(rec.to_json())
    assert d["schema_version"] == SCHEMA_VERSION == 3
    assert d["outcome"]["resolved"] is True and d["identity"]["task_id"] == rec.identity.task_id
    assert d["delivery"] == {"inject_tokens": 120, "custom": [1]} and "resolved" not in d
    assert EpisodeRecord.from_json(rec.to_json()) == rec


def test_the_flat_view_is_version_2_and_reads_back():
    rec = record(resolved=True, stop_reason="resolved", cost_usd=0.25, delivery_info={"corpus_items": 3})
    flat = rec.flat()
    assert set(flat) == set(FLAT) | {"attempts", "delivery_info", "retrieval"}
    assert (flat["resolved"], flat["cost_usd"], flat["delivery_info"], flat["stream_id"]) == (True, 0.25, {"corpus_items": 3},
                                                                                             None)
    assert EpisodeRecord.from_flat(flat) == rec
    assert rec.updated(resolved=False).outcome.resolved is False and rec.outcome.resolved is True
    with pytest.raises(RecordError, match="no record field 'resolvd'"):
        rec.updated(resolvd=True)


def test_every_field_has_one_leaf_name_and_a_dotted_one():
    leaves = [f.name for s, cls in SECTIONS.items() if s != "delivery" for f in fields(cls)]
    assert len(leaves) == len(set(leaves))  # no leaf name in two sections
    rec = record(agent="oracle", resolved=True, stop_reason="resolved", delivery_info={"inject_tokens": 7})
    assert get(rec, "agent") == get(rec, "identity.agent") == "oracle"
    assert get(rec, "outcome.resolved") is True and get(rec, "delivery.inject_tokens") == 7
    assert get(rec, "retrieval.retrieved") is None  # no diagnostics: every retrieval field reads as None
    assert "stream.stream_id" in FIELDS and "storage.key" in FIELDS


def test_the_committed_version_1_records_load_with_every_value_kept():
    files = sorted(REFERENCE.rglob("*.json"))
    assert len(files) == 75
    for f in files:
        old = json.loads(f.read_text())
        assert old["schema"] == "sdebench.episode/1" and "schema_version" not in old
        rec = results.load_record(f)
        new = rec.flat()
        for k, v in old.items():
            if k == "attempts":
                assert all(a.items() <= b.items() for a, b in zip(v, new[k], strict=True))
            elif k != "schema":
                assert new[k] == v, (f.name, k)
        assert rec.extra == {} and rec.outcome.max_interventions is None and rec.outcome.feedback == []
        assert rec.identity.competency == "recall" and "competency" not in old and rec.stream is None
        assert EpisodeRecord.from_json(rec.to_json()) == rec  # and as version 3


def test_a_version_2_record_loads_into_the_same_record():
    rec = record(competency="synthesis", stream_id="s", memory_items=2, task_hash="h", key="k", cost_usd=1)
    v2 = {**rec.flat(), "schema_version": 2}
    assert EpisodeRecord.from_dict(v2) == rec and rec.usage.cost_usd == 1.0 and rec.storage.key == rec.key == "k"
    del v2["competency"]
    assert EpisodeRecord.from_dict(v2).identity.competency == "recall"


def test_unknown_keys_are_kept_and_written_back(tmp_path):
    d = {**record().to_dict(), "gateway_calls": 3, "proxy": {"port": 1}}
    d["outcome"] = {**d["outcome"], "verdict": "odd"}
    rec = EpisodeRecord.from_dict(d)
    assert rec.extra == {"gateway_calls": 3, "proxy": {"port": 1}, "outcome.verdict": "odd"}
    p = tmp_path / "r.json"
    results.write_record(p, rec)
    back = json.loads(p.read_text())
    assert back["gateway_calls"] == 3 and back["outcome"]["verdict"] == "odd" and results.read_record(p) == rec
    v2 = EpisodeRecord.from_dict({**record().flat(), "schema_version": 2, "gateway_calls": 3})
    assert v2.extra == {"gateway_calls": 3}


def _with(change: dict) -> dict:
    d = record().to_dict()
    for k, v in change.items():
        section, _, leaf = k.partition(".")
        if leaf:
            d[section] = {**d[section], leaf: v}
        else:
            d[k] = v
    return d


@pytest.mark.parametrize("change,message", [
    ({"schema_version": 4}, "schema_version 4 is newer than this sdebench reads (3)"),
    ({"schema_version": "3"}, "bad schema_version '3'"),
    ({"outcome.resolved": "yes"}, "field 'outcome.resolved' must be bool, got str"),
    ({"outcome.interventions": True}, "field 'outcome.interventions' must be int, got bool"),
    ({"usage.tool_calls": {"bash": 1.5}}, "field 'usage.tool_calls.bash' must be int, got float"),
    ({"attempts": [{"attempt": 1}]}, "attempts[0] lacks field 'stop_reason'"),
    ({"attempts": "none"}, "field 'attempts' must be list[Attempt], got str"),
    ({"timing": []}, "timing must be an object, got list"),
])
def test_bad_records_are_refused_with_the_reason(change, message):
    with pytest.raises(RecordError, match=re.escape(message)):
        EpisodeRecord.from_dict(_with(change))


def test_bad_version_2_records_are_refused_too():
    with pytest.raises(RecordError, match=re.escape("field 'outcome.resolved' must be bool, got str")):
        EpisodeRecord.from_dict({**record().flat(), "schema_version": 2, "resolved": "yes"})


def test_foreign_or_torn_json_is_not_a_record(tmp_path):
    for text, reason in (('{"hello": 1}', "no schema_version"), ("[1]", "not a JSON object"), ('{"schema_ver', "not valid JSON")):
        with pytest.raises(RecordError, match=reason):
            EpisodeRecord.from_json(text)
    d = record().to_dict()
    del d["identity"]["task_id"]
    with pytest.raises(RecordError, match="identity lacks field 'task_id'"):
        EpisodeRecord.from_dict(d)
    flat = record().flat()
    del flat["task_id"]
    with pytest.raises(RecordError, match="identity lacks field 'task_id'"):
        EpisodeRecord.from_flat(flat)


def test_a_flat_name_set_on_the_record_fails_loudly():
    rec = record()
    with pytest.raises(AttributeError):
        rec.resolved = True  # the field lives in rec.outcome: a silent new attribute would lose it


def test_identity_names_the_episode():
    rec = record(competency="synthesis")
    assert isinstance(rec.identity, Identity) and rec.identity.competency == "synthesis"
    assert results.record_path(Path("/r"), rec.identity, "k").name.endswith("__k.json")


def test_every_field_is_documented():
    doc = (ROOT / "docs" / "records.md").read_text()
    record_part, attempt_part = doc.split("## Fields", 1)[1].split("## Attempt fields")
    rows = lambda text: set(re.findall(r"^\| `([\w.]+)` \|", text, re.M))  # noqa: E731
    assert rows(record_part) == {f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls)
                                 if f.name != "other"} | {"schema_version", "attempts", "retrieval", "delivery.other"}
    assert rows(attempt_part) == {f.name for f in fields(Attempt)}
