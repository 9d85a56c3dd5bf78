"""basic-memory as a memory backend, against the real server (tier `memory`), and its quick failure paths."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdebench.delivery.backend import READ, SEARCH, WRITE, MemoryBackend, MemoryCallError, MemoryLoadError
from sdebench.delivery.decisive import decisive_items
from sdebench.delivery.memory import MemoryItem, corpus_from_repo
from sdebench.memory.basic_memory import BasicMemory, notes_of
from sdebench.memory.install import PYTHON_ENV, SYSTEMS, venv_python
from sdebench.tasks import record, repo

TASK = Path(__file__).resolve().parents[2] / "tasks" / "billing-rounding-v0-K"
PHRASE = "multiple of 0.25"  # from the decisive doc's fact line (checked below)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[list[MemoryItem], object]:
    task = record.load(TASK)
    full = repo.unbundle(task.bundle, tmp_path_factory.mktemp("repo") / "r")
    return corpus_from_repo(full), decisive_items(task)[0]


@pytest.fixture(scope="module")
def loaded(corpus, tmp_path_factory):
    items, _ = corpus
    bm = BasicMemory()
    state = tmp_path_factory.mktemp("bm")
    report = bm.load(items, state)
    yield bm, report, state
    bm.close()


def _search(bm: BasicMemory, query: str, **extra):
    return bm.call("search_notes", {"query": query, **extra})


# --- quick: notes and failure paths that need no installed system -------------------------------
def test_notes_carry_source_id_title_and_text():
    items = [
        MemoryItem("K:docs/adr/0002.md", "K", "docs/adr/0002.md", "Rounding is half-down."),
        MemoryItem("F:.agent/preferences.md#1", "F", "Same title", "a"),
        MemoryItem("X:.agent/past_fixes.md#1", "X", "Same title", "b"),
    ]
    notes = notes_of(items)
    assert [n.permalink for n in notes] == [
        "knowledge/docs-adr-0002-md",
        "feedback/agent-preferences-md-1",
        "experience/agent-past-fixes-md-1",
    ]
    assert [n.title for n in notes] == [
        "docs/adr/0002.md",
        "Same title (F:.agent/preferences.md#1)",
        "Same title (X:.agent/past_fixes.md#1)",
    ]
    text = notes[0].render()
    assert (
        "\nsource: K\n" in text
        and "\ntags: [knowledge]\n" in text
        and '\nmemory_id: "K:docs/adr/0002.md"\n' in text
    )
    assert text.endswith("---\n\nRounding is half-down.\n")


def test_uninstalled_system_is_a_load_error(tmp_path):
    bm = BasicMemory(install=False, cache_dir=str(tmp_path / "empty-cache"))
    with pytest.raises(
        MemoryLoadError, match=r"basic-memory 0\.23\.2 is not installed \(python -m sdebench\.memory\.install"
    ):
        bm.load([MemoryItem("K:a.md", "K", "a.md", "x")], tmp_path / "state")
    assert bm.holds() == frozenset()


def test_the_virtualenv_interpreter_is_new_enough_for_it(monkeypatch):
    assert SYSTEMS["basic-memory"].kind == "venv"
    out = subprocess.run(
        [venv_python(), "-c", "import sys; print(sys.version_info >= (3, 12))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "True"
    monkeypatch.setenv(PYTHON_ENV, "/opt/some/python3.12")
    assert venv_python() == "/opt/some/python3.12"


def test_an_install_that_fails_is_a_load_error(tmp_path, monkeypatch):
    monkeypatch.setenv(PYTHON_ENV, str(tmp_path / "no-python"))
    bm = BasicMemory(cache_dir=str(tmp_path / "cache"))
    with pytest.raises(
        MemoryLoadError,
        match=r"^basic-memory could not be installed: InstallError: .*no-python.* is not installed$",
    ):
        bm.load([MemoryItem("K:a.md", "K", "a.md", "x")], tmp_path / "state")
    assert not any((tmp_path / "cache").glob("basic-memory-*"))  # no half-made install left behind


def test_a_state_dir_it_cannot_write_is_a_load_error(tmp_path):
    (tmp_path / "state").write_text("a file, not a dir")
    bm = BasicMemory(command=(sys.executable, "-c", "pass"))
    with pytest.raises(
        MemoryLoadError, match=r"could not write its notes or config: (FileExistsError|NotADirectoryError)"
    ):
        bm.load([MemoryItem("K:a.md", "K", "a.md", "x")], tmp_path / "state")


def test_a_server_that_cannot_start_is_a_load_error_naming_why(tmp_path):
    bm = BasicMemory(command=(str(tmp_path / "no-such-basic-memory"), "mcp"))
    with pytest.raises(MemoryLoadError, match=r"did not start: .*(No such file|FileNotFound|ENOENT)") as e:
        bm.load([MemoryItem("K:a.md", "K", "a.md", "x")], tmp_path / "state")
    assert "\n" not in str(e.value)
    dying = BasicMemory(
        command=(sys.executable, "-c", "import sys; print('vault is locked', file=sys.stderr); sys.exit(3)")
    )
    with pytest.raises(MemoryLoadError, match=r"did not start: .*vault is locked"):
        dying.load([MemoryItem("K:a.md", "K", "a.md", "x")], tmp_path / "state2")
    dying.close()
    dying.close()


# --- tier memory: the real server ----------------------------------------------------------------
@pytest.mark.memory
def test_load_stores_every_item_in_the_state_dir(loaded, corpus):
    bm, report, state = loaded
    items, _ = corpus
    assert isinstance(bm, MemoryBackend)
    assert (report.backend, report.items, report.stored, report.version) == (
        "basic-memory",
        len(items),
        len(items),
        "0.23.2",
    )
    assert 0 < report.seconds < bm.timeout_s
    assert bm.holds() == frozenset(i.id for i in items)
    assert len(list((state / "notes").rglob("*.md"))) == len(items)
    # its config, database and log live under the state dir; semantic search is off by its own config
    config = json.loads((state / "config" / "config.json").read_text())
    assert config["semantic_search_enabled"] is False and config["projects"]["main"]["path"] == str(
        state / "notes"
    )
    assert (state / "config" / "memory.db").exists()
    assert "semantic_search_enabled=False" in (state / "config" / "basic-memory.log").read_text()
    assert not any((state / "home").rglob("*fastembed*"))
    for note in notes_of(items):  # every item is a note the server reads back as that item
        answer = bm.call("read_note", {"identifier": note.permalink})
        assert not answer.error and answer.items == (note.item.id,)
        assert note.item.text.splitlines()[0] in answer.text


@pytest.mark.memory
def test_search_with_a_phrase_of_the_decisive_doc_ranks_it_first(loaded, corpus):
    bm, _, _ = loaded
    _, decisive = corpus
    assert PHRASE in decisive.lines[0]
    answer = _search(bm, PHRASE)
    assert not answer.error and answer.asked == 10  # its default page size
    assert answer.items[:1] == (decisive.id,)
    assert _search(bm, "invoice", page_size=2).asked == 2 and len(_search(bm, "invoice", limit=2).items) <= 2
    assert "knowledge/docs-conventions-md" in answer.text
    broad = _search(bm, "invoice amounts rounding")  # several notes: items follow the server's order
    assert len(broad.items) >= 2 and len(set(broad.items)) == len(broad.items)
    assert _search(bm, "zzqxwvk").items == ()


@pytest.mark.memory
def test_read_returns_the_items_text(loaded, corpus):
    bm, _, _ = loaded
    items, decisive = corpus
    text = next(i.text for i in items if i.id == decisive.id)
    by_permalink = bm.call("read_note", {"identifier": "knowledge/docs-conventions-md"})
    assert by_permalink.items == (decisive.id,) and text.strip() in by_permalink.text
    by_title = bm.call("read_note", {"identifier": "docs/CONVENTIONS.md"})
    assert decisive.id in by_title.items and "multiple of 0.25" in by_title.text
    context = bm.call("build_context", {"url": "memory://knowledge/docs-conventions-md"})
    assert not context.error and context.items[:1] == (decisive.id,)


@pytest.mark.memory
def test_tools_are_the_servers_own_and_write_is_absent_by_default(loaded):
    bm, _, _ = loaded
    declared = {t["name"]: t for t in bm._proc.tools()}
    tools = {t.name: t for t in bm.tools()}
    assert {n: t.kind for n, t in tools.items()} == {
        "search_notes": SEARCH,
        "read_note": READ,
        "build_context": READ,
    }
    for name, tool in tools.items():
        assert (tool.description, tool.parameters) == (
            declared[name]["description"],
            declared[name]["input_schema"],
        )
    assert tools["search_notes"].query_arg == "query"
    assert "write_note" in declared
    for name in ("write_note", "delete_note", "create_memory_project", "list_memory_projects"):
        with pytest.raises(MemoryCallError, match="unknown memory tool"):
            bm.call(name, {})


@pytest.mark.memory
def test_with_write_a_written_note_is_found_by_search(corpus, tmp_path):
    items, _ = corpus
    bm = BasicMemory(write=True)
    bm.load(items, tmp_path)
    try:
        assert {t.name: t.kind for t in bm.tools()}["write_note"] == WRITE
        wrote = bm.call(
            "write_note",
            {
                "title": "Deploy window",
                "directory": "agent",
                "content": "Deploys happen in the zebraquartz window on Thursdays.",
            },
        )
        assert not wrote.error, wrote.text
        deadline = time.monotonic() + 30
        while (
            "Deploy window" not in (found := _search(bm, "zebraquartz")).text and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        assert "Deploy window" in found.text
        assert found.items == ()  # a note the agent wrote is no memory item
        assert bm.holds() == frozenset(i.id for i in items)
    finally:
        bm.close()


@pytest.mark.memory
def test_indexing_that_outlasts_the_timeout_is_a_load_error(tmp_path):
    items = [
        MemoryItem(f"X:.agent/past_fixes.md#{n}", "X", f"fix {n}", f"Fixed flaky test number {n}.")
        for n in range(2000)
    ]
    bm = BasicMemory(timeout_s=20)
    with pytest.raises(MemoryLoadError, match=r"indexed \d+ of 2000 notes within 20 s"):
        bm.load(items, tmp_path)
    assert bm.holds() == frozenset()
    with pytest.raises(RuntimeError, match="not running"):
        bm.call("search_notes", {"query": "fix"})


@pytest.mark.memory
def test_close_twice_is_fine_and_a_closed_backend_answers_no_more(corpus, tmp_path):
    items, _ = corpus
    bm = BasicMemory()
    bm.load(items, tmp_path)
    report = bm.load(items[:3], tmp_path)  # a second load into the same state holds only its own items
    assert report.stored == 3 and len(list((tmp_path / "notes").rglob("*.md"))) == 3
    bm.close()
    bm.close()
    assert bm.tools() == ()
    assert bm.holds() == frozenset(i.id for i in items[:3])
    with pytest.raises(RuntimeError, match="not running"):
        bm.call("search_notes", {"query": "x"})


@pytest.mark.memory
def test_an_episode_under_memtool_loads_it_and_records_its_searches(tmp_path):
    from sdebench.runs.assemble import run_episode
    from sdebench.sandbox import make_factory

    cfg = {
        "agent": {"name": "searcher", "generators": None},
        "model": {"name": "none"},
        "delivery": {"name": "memtool"},
        "memory": {"name": "sdebench.memory.basic_memory:BasicMemory"},
        "seed": 0,
        "max_interventions": 5,
        "limits": {"max_turns": 500, "max_cost_usd": 2.0, "max_wall_s": 600},
    }
    rec = run_episode(
        record.load(TASK),
        cfg,
        make_factory({"backend": "unsafe_local"}),
        trajectory_path=tmp_path / "t.jsonl",
    )
    assert rec.outcome.error is None
    load = rec.delivery.memory_load
    assert load["backend"] == "basic-memory" and load["items"] == load["stored"] == rec.delivery.corpus_items
    assert rec.retrieval.searchable
    assert [(s.tool, s.k) for s in rec.retrieval.searches][:1] == [("search_notes", 10)]
