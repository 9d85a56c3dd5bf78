"""The scripted OpenAI-compatible test server, spoken to over real HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sdebench.testing import testmodel
from sdebench.testing.testmodel import ScriptError, load_script, parse_script

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"


def _post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _chat(base: str, n: int = 0) -> tuple[int, dict[str, Any]]:
    return _post(f"{base}/chat/completions", {"model": "testmodel", "messages": [{"role": "user", "content": str(n)}]})


def test_subprocess_server_serves_a_yaml_script_in_order(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(
        "model: scripted-1\n"
        "default_usage: {prompt_tokens: 7, completion_tokens: 3}\n"
        "steps:\n"
        "  - error: 429\n"
        "  - tool: read_file\n"
        "    arguments: {path: a.py}\n"
        "    usage: {prompt_tokens: 1000, completion_tokens: 50, cached_tokens: 400}\n"
        "  - text: thinking\n"
        "  - garbage: '{\"path\": '\n"
        "    tool: edit_file\n"
        "  - tool_calls:\n"
        "      - {name: edit_file, arguments: {path: a.py, old_string: x, new_string: y}}\n"
        "      - {name: submit}\n"
    )
    with testmodel.subprocess_server(script) as base:
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        status, body = _chat(base, 1)
        assert status == 429 and body["error"]["type"] == "rate_limit_error"
        status, body = _chat(base, 2)
        assert status == 200 and body["model"] == "scripted-1"
        msg = body["choices"][0]["message"]
        assert msg["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path": "a.py"}'}
        assert body["usage"] == {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                                 "prompt_tokens_details": {"cached_tokens": 400}}
        status, body = _chat(base, 3)
        assert body["choices"][0]["message"]["content"] == "thinking"
        assert body["choices"][0]["finish_reason"] == "stop"
        assert body["usage"]["prompt_tokens"] == 7 and body["usage"]["completion_tokens"] == 3
        _, body = _chat(base, 4)
        garbled = body["choices"][0]["message"]["tool_calls"][0]["function"]
        assert garbled["name"] == "edit_file" and garbled["arguments"] == '{"path": '
        _, body = _chat(base, 5)
        assert [c["function"]["name"] for c in body["choices"][0]["message"]["tool_calls"]] == ["edit_file", "submit"]
        status, body = _post(f"{base}/chat/completions", {"messages": []})
        assert status == 400 and "script exhausted" in body["error"]["message"]
        reqs = _get(base.removesuffix("/v1") + "/requests")
        assert [r["n"] for r in reqs] == [1, 2, 3, 4, 5, 6]
        assert [r["step"] for r in reqs] == [1, 2, 3, 4, 5, None]
        assert reqs[2]["body"]["messages"][0]["content"] == "3"


def test_repeat_at_and_both_paths():
    script = parse_script([{"text": "first"}, {"error": 500, "at": 2}, {"text": "again", "repeat": True}])
    with testmodel.in_thread(script) as server:
        base = testmodel.base_url(server)
        root = base.removesuffix("/v1")
        assert _chat(base)[1]["choices"][0]["message"]["content"] == "first"
        assert _post(f"{root}/chat/completions", {"messages": []})[0] == 500
        for _ in range(3):
            assert _chat(base)[1]["choices"][0]["message"]["content"] == "again"
        assert [r["path"] for r in _get(f"{root}/requests")][:2] == ["/v1/chat/completions", "/chat/completions"]


def test_a_new_script_can_be_posted():
    with testmodel.in_thread(parse_script([{"text": "a"}])) as server:
        base = testmodel.base_url(server)
        root = base.removesuffix("/v1")
        _chat(base)
        assert _post(f"{root}/script", [{"text": "b"}]) == (200, {"ok": True})
        assert _get(f"{root}/requests") == []
        assert _chat(base)[1]["choices"][0]["message"]["content"] == "b"
        status, body = _post(f"{root}/script", {"nope": 1})
        assert status == 400 and "steps" in body["error"]["message"]
        assert _get(f"{root}/health") == {"ok": True}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"x": 1}, "a script is a list of steps"),
        ([1], "step 1: a step is a mapping"),
        ([{"text": "a", "error": 500}], "needs exactly one of"),
        ([{}], "needs exactly one of"),
        ([{"error": 200}], "error must be an HTTP status"),
        ([{"tool": "", "arguments": {}}], "tool name must be a non-empty string"),
        ([{"tool": "a", "arguments": [1]}], "arguments must be a mapping or a string"),
        ([{"text": "a", "usage": {"prompt_tokens": -1}}], "usage must map names to non-negative integers"),
        ([{"tool_calls": []}], "tool_calls must be a non-empty list"),
    ],
)
def test_bad_scripts_are_rejected_with_a_clear_message(doc, message):
    with pytest.raises(ScriptError, match=message):
        parse_script(doc)


def test_cli_reports_a_bad_script_in_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = subprocess.run([sys.executable, "-m", "sdebench.testmodel", "--script", str(bad), "--port", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("error: script") and len(out.stderr.strip().splitlines()) == 1
    missing = subprocess.run([sys.executable, "-m", "sdebench.testmodel", "--script", str(tmp_path / "nope.yaml")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "cannot read script" in missing.stderr


def test_fixture_scripts_are_valid():
    files = sorted(FIXTURES.glob("*.yaml")) + sorted(FIXTURES.glob("*.json"))
    assert files
    for f in files:
        assert load_script(f).steps, f


def test_subprocess_server_reports_why_it_did_not_start(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [{text: a, error: 500}]\n")
    with pytest.raises(RuntimeError, match="did not start: error: script .*needs exactly one of"), \
            testmodel.subprocess_server(bad):
        pass


def test_anthropic_messages_and_responses_are_served_streamed_or_not():
    steps = [{"tool": "Bash", "arguments": {"command": "ls"}, "usage": {"prompt_tokens": 900, "completion_tokens": 9, "cached_tokens": 400}},
             {"text": "done"}, {"tool": "exec_command", "arguments": {"cmd": "ls"}}, {"text": "ok"}]
    with testmodel.in_thread(parse_script(steps)) as srv:
        root = testmodel.base_url(srv)
        msg = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        status, body = _post(f"{root}/messages", msg)
        assert status == 200 and body["content"][0]["name"] == "Bash"
        assert body["usage"] == {"input_tokens": 500, "output_tokens": 9, "cache_read_input_tokens": 400,
                                 "cache_creation_input_tokens": 0}
        req = urllib.request.Request(f"{root}/messages", data=json.dumps({**msg, "stream": True}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.headers["Content-Type"] == "text/event-stream"
            text = r.read().decode()
        assert "event: message_start" in text and '"text": "done"' in text and "event: message_stop" in text
        status, body = _post(f"{root}/responses", {"model": "m", "input": "hi"})
        assert status == 200 and body["output"][0]["type"] == "function_call" and body["output"][0]["name"] == "exec_command"
        req = urllib.request.Request(f"{root}/responses", data=json.dumps({"model": "m", "input": "hi", "stream": True}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
        assert "event: response.completed" in text and '"text": "ok"' in text
        assert [x["protocol"] for x in _get(f"{root.removesuffix('/v1')}/requests")] == ["anthropic"] * 2 + ["responses"] * 2


def test_a_default_delay_and_a_rate_limit_of_requests_in_flight():
    """`delay_s` delays every step that sets none; past `max_inflight` at once a request gets 429 + Retry-After."""
    import threading
    import time

    script = parse_script({"steps": [{"text": "a", "repeat": True}], "delay_s": 0.4, "max_inflight": 1})
    with testmodel.in_thread(script) as server:
        url = testmodel.base_url(server) + "/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        t0 = time.monotonic()
        answers: list[int] = []
        first = threading.Thread(target=lambda: answers.append(_post(url, body)[0]))
        first.start()
        time.sleep(0.15)  # the first request is being answered (its delay runs)
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 429 and e.value.headers["Retry-After"] == "1"
        assert json.loads(e.value.read())["error"]["type"] == "rate_limit_error"
        first.join()
        assert answers == [200] and time.monotonic() - t0 >= 0.4
        assert _post(url, body)[0] == 200  # the limit counts requests in flight, not a quota
        base = testmodel.base_url(server).removesuffix("/v1")
        with urllib.request.urlopen(base + "/limited", timeout=10) as r:
            assert json.loads(r.read()) == {"limited": 1}
        with urllib.request.urlopen(base + "/requests", timeout=10) as r:
            assert len(json.loads(r.read())) == 2  # the refused request used no step


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # the vectors are of unit length


def test_embeddings_are_deterministic_hashed_bags_of_words_with_counted_usage():
    """POST /v1/embeddings: one unit vector an input, texts sharing words are near, tokens are words."""
    import base64
    import struct

    script = parse_script({"steps": [{"text": "a"}], "embedding_dims": 64})
    with testmodel.in_thread(script) as server:
        base = testmodel.base_url(server)
        texts = [
            "invoices round toward zero to a quarter",
            "Invoices are ROUNDED toward zero, to a quarter!",
            "the cache ttl is 417 seconds",
            "",
        ]
        status, body = _post(f"{base}/embeddings", {"model": "embed-1", "input": texts})
        assert status == 200 and body["object"] == "list" and body["model"] == "embed-1"
        vecs = [d["embedding"] for d in sorted(body["data"], key=lambda d: d["index"])]
        assert [len(v) for v in vecs] == [64] * 4
        assert all(abs(_cosine(v, v) - 1.0) < 1e-9 for v in vecs)
        assert _cosine(vecs[0], vecs[1]) > 0.6 > 0.3 > _cosine(vecs[0], vecs[2])
        assert vecs[3] == [1.0] + [0.0] * 63  # no words: the first unit vector
        assert body["usage"] == {"prompt_tokens": 7 + 8 + 6 + 1, "total_tokens": 22}
        # the same text, another request, the root path and the request's own size
        status, again = _post(f"{base.removesuffix('/v1')}/embeddings", {"input": texts[0], "dimensions": 16})
        assert status == 200 and len(again["data"][0]["embedding"]) == 16 and again["model"] == "testmodel"
        assert again["data"][0]["embedding"] == testmodel.embed(texts[0], 16)
        as_base64 = {"input": texts[0], "dimensions": 64, "encoding_format": "base64"}
        packed = _post(f"{base}/embeddings", as_base64)[1]
        floats = struct.unpack("<64f", base64.b64decode(packed["data"][0]["embedding"]))
        assert max(abs(a - b) for a, b in zip(floats, vecs[0], strict=True)) < 1e-6
        root = base.removesuffix("/v1")
        assert _get(f"{root}/embeddings") == {"requests": 3, "inputs": 6, "tokens": 22 + 7 + 7}
        assert _get(f"{root}/requests") == []  # embeddings use no step
        for bad, why in [
            ({"input": [1, 2]}, "token arrays"),
            ({"input": []}, "non-empty list"),
            ({"input": "x", "dimensions": 0}, "dimensions"),
            ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
        ]:
            status, err = _post(f"{base}/embeddings", bad)
            assert status == 400 and why in err["error"]["message"]
        assert _chat(base)[0] == 200
        _post(f"{root}/script", [{"outage": 503}])
        assert _chat(base)[0] == 503
        # an outage in force fails embeddings too
        assert _post(f"{base}/embeddings", {"input": "x"})[0] == 503


def test_embedding_dims_are_validated_in_the_script_and_on_the_command_line(tmp_path):
    with pytest.raises(ScriptError, match="embedding_dims must be"):
        parse_script({"steps": [], "embedding_dims": 0})
    script = tmp_path / "s.yaml"
    script.write_text("steps: [{text: a}]\n")
    argv = [sys.executable, "-m", "sdebench.testmodel", "--script", str(script), "--embedding-dims", "0"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--embedding-dims" in out.stderr
