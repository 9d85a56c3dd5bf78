"""The typed, versioned episode record: round trips, version 1 records, unknown keys, bad input, docs."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from sdebench.runs import results
from sdebench.runs.record import SCHEMA_VERSION, Attempt, EpisodeRecord, Identity, RecordError
from tests.helpers import record

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "experiments" / "reference" / "episodes"


def test_a_record_round_trips_through_its_json():
    rec = record(resolved=True, stop_reason="resolved", stream_id="s:both", stream_position=2, feedback=["no"],
                 attempts=[{"attempt": 1, "stop_reason": "submitted", "turns": 2, "resolved": True, "counts": {},
                            "pass_ratio": 1, "guards": [], "grade_error": None, "grade_s": 0.5}])
    assert isinstance(rec.attempts[0], Attempt) and rec.attempts[0].pass_ratio == 1.0 and not rec.attempts[0].grade_reused
    text = rec.to_json()
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION == 2
    assert EpisodeRecord.from_json(text) == rec
    assert rec.identity() == Identity(**{f.name: getattr(rec, f.name) for f in fields(Identity)})


def test_the_committed_version_1_records_load_with_every_value_kept():
    files = sorted(REFERENCE.rglob("*.json"))
    assert len(files) == 75
    for f in files:
        old = json.loads(f.read_text())
        assert old["schema"] == "sdebench.episode/1" and "schema_version" not in old
        rec = results.load_record(f)
        new = rec.to_dict()
        for k, v in old.items():
            if k == "attempts":
                assert all(a.items() <= b.items() for a, b in zip(v, new[k], strict=True))
            elif k != "schema":
                assert new[k] == v, (f.name, k)
        assert rec.extra == {} and rec.max_interventions is None and rec.feedback == []
        assert rec.competency == "recall" and "competency" not in old


def test_competency_is_recorded_and_old_records_are_recall():
    rec = record(competency="synthesis")
    assert EpisodeRecord.from_json(rec.to_json()).competency == "synthesis" == rec.identity().competency
    d = rec.to_dict()
    del d["competency"]
    assert EpisodeRecord.from_dict(d).competency == "recall"


def test_unknown_keys_are_kept_and_written_back(tmp_path):
    d = {**record().to_dict(), "gateway_calls": 3, "proxy": {"port": 1}}
    rec = EpisodeRecord.from_dict(d)
    assert rec.extra == {"gateway_calls": 3, "proxy": {"port": 1}}
    p = tmp_path / "r.json"
    results.write_record(p, rec)
    assert json.loads(p.read_text())["gateway_calls"] == 3 and results.read_record(p) == rec


@pytest.mark.parametrize("change,message", [
    ({"schema_version": 3}, "schema_version 3 is newer than this sdebench reads (2)"),
    ({"schema_version": "2"}, "bad schema_version '2'"),
    ({"resolved": "yes"}, "field 'resolved' must be bool, got str"),
    ({"interventions": True}, "field 'interventions' must be int, got bool"),
    ({"attempts": [{"attempt": 1}]}, "attempt lacks field 'stop_reason'"),
    ({"attempts": "none"}, "field 'attempts' must be list[Attempt], got str"),
])
def test_bad_records_are_refused_with_the_reason(change, message):
    with pytest.raises(RecordError, match=re.escape(message)):
        EpisodeRecord.from_dict({**record().to_dict(), **change})


def test_foreign_or_torn_json_is_not_a_record(tmp_path):
    for text, reason in (('{"hello": 1}', "no schema_version"), ("[1]", "not a JSON object"), ('{"schema_ver', "not valid JSON")):
        with pytest.raises(RecordError, match=reason):
            EpisodeRecord.from_json(text)
    d = record().to_dict()
    del d["task_id"]
    with pytest.raises(RecordError, match="record lacks field 'task_id'"):
        EpisodeRecord.from_dict(d)


def test_every_field_is_documented():
    doc = (ROOT / "docs" / "records.md").read_text()
    record_part, attempt_part = doc.split("## Attempt fields")
    rows = lambda text: set(re.findall(r"^\| `(\w+)` \|", text, re.M))  # noqa: E731
    assert rows(record_part) == {f.name for f in fields(EpisodeRecord) if f.name != "extra"} | {"schema_version"}
    assert rows(attempt_part) == {f.name for f in fields(Attempt)}
