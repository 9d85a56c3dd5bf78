"""The bounded parser of runner lines: hostile payloads are no record, and it never raises."""

from __future__ import annotations

import json
import random

import pytest

from sdebench.grading import records
from sdebench.grading.records import clean_text, parse

HOSTILE = {
    "deep_list": b"[" * 100_000 + b"]" * 100_000,
    "deep_in_record": b'{"k": "test", "id": "t", "outcome": "passed", "obs": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "deep_just_over": (b'{"k": "test", "id": "t", "outcome": "passed", "obs": ' + b"[" * records.MAX_DEPTH
                       + b"]" * records.MAX_DEPTH + b"}"),
    "huge_int": b'{"k": "end", "exit": ' + b"9" * 5000 + b"}",
    "long_int": b'{"k": "test", "id": "t", "outcome": "passed", "duration": 12345678901234567890123}',
    "huge_float": b'{"k": "test", "id": "t", "outcome": "passed", "duration": 1e999}',
    "nan": b'{"k": "test", "id": "t", "outcome": "passed", "duration": NaN}',
    "infinity": b'{"k": "end", "exit": -Infinity}',
    "invalid_utf8": b'{"k": "test", "id": "t\xff\xfe", "outcome": "passed"}',
    "utf16": json.dumps({"k": "start"}).encode("utf-16"),
    "giant": b'{"k": "crash", "message": "' + b"m" * (records.MAX_LINE + 1) + b'"}',
    "not_a_dict": b'[{"k": "start"}]',
    "no_kind": b'{"id": "t", "outcome": "passed"}',
    "unknown_kind": b'{"k": "pass_everything"}',
    "id_not_text": b'{"k": "test", "id": ["t"], "outcome": "passed"}',
    "id_missing": b'{"k": "test", "outcome": "passed"}',
    "obs_not_list": b'{"k": "test", "id": "t", "outcome": "passed", "obs": {"a": 1}}',
    "negative_duration": b'{"k": "test", "id": "t", "outcome": "passed", "duration": -1}',
    "bool_duration": b'{"k": "test", "id": "t", "outcome": "passed", "duration": true}',
    "tamper_not_text": b'{"k": "tamper", "what": [1, 2]}',
    "unknown_marker": b'{"p": "anything"}',
    "truncated": b'{"k": "test", "id": "t", "outc',
    "empty": b"",
    "nul_inside_json": b'{"k": "start"}\x00',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_payload_is_no_record_and_never_raises(name):
    assert parse(HOSTILE[name]) is None


def test_records_come_out_normalised_and_bounded():
    rec = parse(b'{"k": "test", "id": "t::a", "outcome": "passed", "obs": [["int", "1"]]}')
    assert rec == {"k": "test", "id": "t::a", "outcome": "passed", "message": "", "duration": 0.0,
                   "obs": [["int", "1"]]}
    # An outcome the runner never writes is not a pass; an exit that is not a small int is none.
    assert parse(b'{"k": "test", "id": "t", "outcome": "PASSED"}')["outcome"] == "error"
    assert parse(b'{"k": "end", "exit": "0"}') == {"k": "end", "exit": None}
    assert parse(b'{"k": "end", "exit": 3}') == {"k": "end", "exit": 3}
    # Text: lone surrogates, NUL and control characters gone, lengths capped (messages keep their end).
    rec = parse(b'{"k": "import", "module": "m\\u0000\\ud800x", "error": "' + b"e" * 20_000 + b'END"}')
    assert rec["module"] == "m?x" and len(rec["error"]) == records.MAX_TEXT and rec["error"].endswith("END")
    assert parse(b'{"k": "tamper", "what": ' + json.dumps(["w"] * 500).encode() + b"}")["what"] == ["w"] * 100
    assert parse(b'{"p": "test", "id": "t::a", "extra": [[[]]]}') == {"p": "test", "id": "t::a"}
    assert parse(b'{"p": "gate"}') == {"p": "gate"}
    # The deepest the runner writes (observations 40 values deep) is well within the bounds.
    from sdebench.grading import _runner

    for wrap in (lambda v: [v], lambda v: {"k": v}):
        value: object = 1
        for _ in range(_runner.MAX_DEPTH):
            value = wrap(value)
        line = json.dumps({"k": "test", "id": "t", "outcome": "passed", "obs": [_runner.encode(value)]}).encode()
        assert parse(line)["obs"] == [_runner.encode(value)]


def test_clean_text_is_a_fixed_transform():
    assert clean_text("a\x00b\x1b[1m\x7f\x85\udcff\n\tc") == "ab[1m?\n\tc"
    assert clean_text("é€ 417 half-down") == "é€ 417 half-down"  # printable text is left exactly as it is
    assert clean_text("x" * 50, 10) == "x" * 10 and clean_text("ab" * 10, 3, tail=True) == "bab"
    clean_text("\udcff" * 10).encode("utf-8")  # always encodable


def test_random_and_mutated_payloads_never_raise():
    rng = random.Random(7)
    valid = [json.dumps(r).encode() for r in (
        {"k": "start"}, {"k": "end", "exit": 0}, {"k": "test", "id": "a::b", "outcome": "failed", "message": "x",
                                                  "duration": 0.5, "obs": [["list", [["int", "3"]]]]},
        {"k": "tamper", "what": ["os.write replaced"]}, {"p": "test", "id": "a::b"})]
    for _ in range(3000):
        data = bytearray(rng.choice(valid))
        for _ in range(rng.randint(1, 6)):
            op = rng.randrange(3)
            pos = rng.randrange(len(data) + 1)
            if op == 0:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            elif op == 1 and data:
                del data[pos:pos + rng.randint(1, 8)]
            else:
                data[pos:pos] = rng.choice([b"[" * 2000, b"9" * 400, b"1e400", b'"\\ud800"', b"\xff", b"{}"])
        rec = parse(bytes(data))
        assert rec is None or "k" in rec or "p" in rec
