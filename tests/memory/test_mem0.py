"""mem0 (pinned, installed into the agent cache) against the scripted test model, on a real task's memory
corpus: loading with and without mem0's LLM extraction, search and read answers mapped back to corpus
items, the metering of its model calls, and its failures as one-line errors."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from sdebench.delivery.backend import READ, SEARCH, WRITE, MemoryLoadError
from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import MemoryItem, corpus_from_repo
from sdebench.memory import install
from sdebench.memory.mem0 import DRIVER, Mem0Memory
from sdebench.tasks import record, repo
from sdebench.tasks.tokens import normalise
from sdebench.testing import testmodel

pytestmark = pytest.mark.memory

TASK = Path(__file__).resolve().parents[2] / "tasks" / "billing-rounding-v0-K"
PRICES = {
    "input": 3.0,
    "output": 15.0,
}  # USD per million tokens, made up (the test model is unknown to litellm)
EMBEDDING_PRICES = {"input": 0.02, "output": 0.0}
USAGE = {"prompt_tokens": 400, "completion_tokens": 40}  # what each scripted extraction reply reports


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[list[MemoryItem], MemoryItem, str]:
    """The task's memory items, its decisive item and that item's fact line as the doc writes it."""
    task = record.load(TASK)
    items = corpus_from_repo(repo.unbundle(task.bundle, tmp_path_factory.mktemp("repo") / "r"))
    (dec,) = decisive_items(task)
    item = next(i for i in items if i.id == dec.id)
    line = next(ln for ln in item.text.splitlines() if normalise(ln) in dec.lines)
    return items, item, line.strip("- ").strip()


@pytest.fixture
def server():
    with testmodel.in_thread(testmodel.parse_script([])) as srv:
        yield srv


def mem0(srv, **kw) -> Mem0Memory:
    opts = {
        "base_url": testmodel.base_url(srv),
        "model": "testmodel",
        "embedding_model": "test-embedder",
        "prices": PRICES,
        "embedding_prices": EMBEDDING_PRICES,
        "timeout_s": 60,
        **kw,
    }
    return Mem0Memory(**opts)


def extracted(item: MemoryItem, fact: str | None) -> list[str]:
    """What the scripted LLM "extracts" from an item: its longer lines (at most three), and the fact line."""
    lines = [ln.strip("-#* ").strip() for ln in item.text.splitlines()]
    out = [ln for ln in lines if len(ln) >= 40][:3]
    return out + [fact] if fact and fact not in out else out


def extraction_script(items: list[MemoryItem], decisive: MemoryItem, fact: str) -> list[dict]:
    """One reply to mem0's extraction prompt per item, in load order, in the JSON shape mem0 asks for."""
    steps = []
    for item in items:
        memories = [
            {"id": str(n), "text": t}
            for n, t in enumerate(extracted(item, fact if item is decisive else None))
        ]
        steps.append({"text": json.dumps({"memory": memories}), "usage": USAGE})
    return steps


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert msg and "\n" not in msg, msg
    return msg


def test_load_without_inference_stores_each_item_and_searches_by_meaning(server, corpus, tmp_path):
    items, decisive, fact = corpus
    m = mem0(server, infer=False)
    try:
        report = m.load(items, tmp_path / "state")
        assert (report.backend, report.items, report.stored, report.version) == ("mem0", 18, 18, "2.2.1")
        assert report.llm_calls == 0 and report.extra["embedding_calls"] == 18  # one embedding an item
        assert 0 < report.extra["startup_s"] < report.seconds
        assert report.tokens == report.extra["embedding_tokens"] == server.model.embeddings["tokens"] > 0
        assert report.cost_usd == pytest.approx(report.tokens * EMBEDDING_PRICES["input"] / 1e6)
        assert m.holds() == frozenset(i.id for i in items)
        assert [(t.name, t.kind, t.query_arg) for t in m.tools()] == [
            ("search_memories", SEARCH, "query"),
            ("get_memories", READ, None),
            ("get_memory", READ, None),
        ]
        answer = m.call("search_memories", {"query": fact})
        assert not answer.error and answer.items[0] == decisive.id and len(answer.items) <= 5
        results = json.loads(answer.text)["results"]
        assert (
            results[0]["metadata"] == {"item_id": decisive.id, "source": "K"} and fact in results[0]["memory"]
        )
        # read: one memory by its id, and the listing
        one = m.call("get_memory", {"memory_id": results[0]["id"]})
        assert one.items == (decisive.id,) and json.loads(one.text)["memory"] == decisive.render()
        listing = m.call("get_memories", {"limit": 100})
        assert set(listing.items) == {i.id for i in items}
        missing = m.call("get_memory", {"memory_id": "00000000-0000-0000-0000-000000000000"})
        assert missing.error and missing.items == () and "no memory with that id" in missing.text
        with pytest.raises(ValueError, match="unknown memory tool"):
            m.call("add_memory", {"text": "x"})  # not offered without `write`
        # the episode's calls are metered apart from the load's: the search and the read embedded nothing else
        assert m.usage()["load"]["embedding_calls"] == 18 and m.usage()["episode"]["embedding_calls"] == 1
        # nothing the agent sees names a host path
        assert str(tmp_path) not in answer.text + listing.text
    finally:
        m.close()
        m.close()


def test_load_with_inference_extracts_memories_metered_per_call(server, corpus, tmp_path):
    items, decisive, fact = corpus
    steps = extraction_script(items, decisive, fact)
    agent_fact = "Receipts are archived for seven years in the finance vault."
    steps.append({"text": json.dumps({"memory": [{"id": "0", "text": agent_fact}]}), "usage": USAGE})
    server.model.reset(testmodel.parse_script(steps))
    m = mem0(server, infer=True, write=True)
    try:
        report = m.load(items, tmp_path / "state")
        derived = {i.id: extracted(i, fact if i is decisive else None) for i in items}
        assert report.llm_calls == 18 and report.stored == sum(len(v) for v in derived.values())
        assert m.holds() == frozenset(
            i for i, v in derived.items() if v
        )  # an item nothing came of is not held
        embed_tokens = report.extra["embedding_tokens"]
        assert report.extra["embedding_calls"] == 18 + sum(
            1 for v in derived.values() if v
        )  # the item, then its memories
        assert report.tokens == 18 * 440 + embed_tokens > 0
        assert report.cost_usd == pytest.approx(
            18 * (400 * 3.0 + 40 * 15.0) / 1e6 + embed_tokens * 0.02 / 1e6
        )
        # mem0 really asked its LLM about each item, in load order, through the gateway
        prompts = [r["body"]["messages"][-1]["content"] for r in server.model.requests]
        assert len(prompts) == 18 and all(f"] {i.id} - " in p for i, p in zip(items, prompts, strict=True))
        # a derived memory maps to the item it came from
        answer = m.call("search_memories", {"query": fact, "limit": 3})
        top = json.loads(answer.text)["results"][0]
        assert answer.items[0] == decisive.id and top["memory"] == fact
        # the agent writes text only; what mem0 derives from it belongs to no corpus item
        (add,) = [t for t in m.tools() if t.kind == WRITE]
        assert add.name == "add_memory" and set(add.parameters["properties"]) == {"text"}
        wrote = m.call(
            "add_memory", {"text": "Keep receipts for seven years.", "metadata": {"item_id": decisive.id}}
        )
        assert (
            not wrote.error
            and wrote.items == ()
            and json.loads(wrote.text)["results"][0]["memory"] == agent_fact
        )
        found = m.call("search_memories", {"query": agent_fact, "limit": 1})
        assert json.loads(found.text)["results"][0]["memory"] == agent_fact and found.items == ()
        episode = m.usage()["episode"]
        assert episode["llm_calls"] == 1 and episode["cost_usd"] > 0
    finally:
        m.close()
        m.close()


def test_a_dead_model_server_is_a_one_line_load_error(corpus, tmp_path):
    items, _, _ = corpus
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    for infer in (False, True):
        m = Mem0Memory(
            infer=infer,
            base_url=dead,
            model="testmodel",
            embedding_model="e",
            prices=PRICES,
            embedding_prices=EMBEDDING_PRICES,
            timeout_s=60,
        )
        with pytest.raises(MemoryLoadError) as e:
            m.load(items, tmp_path / f"state-{infer}")
        msg = _one_line(e)
        assert f"could not add memory item {items[0].id}" in msg and "upstream model error" in msg
        assert not _driver_pids()  # the failed load stopped mem0
        m.close()
        m.close()


def test_configuration_errors_are_one_line_load_errors(server, corpus, tmp_path):
    items, _, _ = corpus
    with pytest.raises(MemoryLoadError) as e:
        Mem0Memory(base_url=testmodel.base_url(server)).load(items, tmp_path / "a")
    assert "memory.model" in _one_line(e)
    with pytest.raises(MemoryLoadError) as e:
        mem0(server, prices=None).load(items, tmp_path / "b")  # litellm has no price for the test model
    assert "mem0's llm 'testmodel'" in _one_line(e) and "no price" in str(e.value)
    with pytest.raises(MemoryLoadError) as e:
        mem0(server, api_key_env="SDEBENCH_TEST_NO_SUCH_KEY").load(items, tmp_path / "c")
    assert "SDEBENCH_TEST_NO_SUCH_KEY" in _one_line(e)


def test_a_version_that_cannot_be_installed_is_a_one_line_load_error(server, corpus, tmp_path, monkeypatch):
    spec = dataclasses.replace(install.SYSTEMS["mem0"], version="0.0.0.dev0")  # no such release on PyPI
    monkeypatch.setitem(install.SYSTEMS, "mem0", spec)
    with pytest.raises(MemoryLoadError) as e:
        mem0(server, cache_dir=str(tmp_path / "cache")).load(corpus[0], tmp_path / "state")
    assert "mem0 is not installed and could not be" in _one_line(e)


def test_a_server_that_cannot_start_is_a_one_line_load_error(server, corpus, tmp_path):
    with pytest.raises(MemoryLoadError) as e:
        mem0(server, embedding_dims=0).load(corpus[0], tmp_path / "state")  # mem0's vector store refuses it
    msg = _one_line(e)
    assert "did not start" in msg and "Vector size 0 is invalid" in msg
    assert not _driver_pids()


def test_a_crashed_server_is_an_error_of_the_call(server, corpus, tmp_path):
    items, _, fact = corpus
    m = mem0(server, infer=False)
    try:
        m.load(items[:3], tmp_path / "state")
        (pid,) = _driver_pids()
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        with pytest.raises(RuntimeError) as e:
            m.call("search_memories", {"query": fact})
        assert "mem0 did not answer search_memories" in _one_line(e)
    finally:
        m.close()
        m.close()


def _driver_pids() -> list[int]:
    """The mem0 servers this process runs now (its children running the driver)."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if not entry.isdigit() or str(DRIVER).encode() not in Path(f"/proc/{entry}/cmdline").read_bytes():
                continue
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():  # the field after the state: the parent
            pids.append(int(entry))
    return pids
