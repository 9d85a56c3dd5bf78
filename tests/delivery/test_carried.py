"""Carried memory: entries earned by episodes, and how each delivery mode applies them."""

from __future__ import annotations

import pytest

from sdebench.components import build_delivery
from sdebench.delivery.carried import CarriedMemory, CarryError, after_episode, kinds_for, write_into
from sdebench.delivery.memory import split_entries
from sdebench.runs.record import EpisodeRecord, Identity
from sdebench.tasks import repo
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES
from tests.minitask import build_all

DIFF = "--- a/shop/pricing.py\n+++ b/shop/pricing.py\n@@ -1 +1 @@\n-LOYALTY_RATE = 0.10\n+LOYALTY_RATE = 0.17\n"
ID = Identity("t", "f", 0, "none", "knowledge-missing", "full", "learner", "none", 0)
SOLVED = EpisodeRecord.from_flat(dict(**vars(ID), resolved=True, final_diff=DIFF, feedback=["Not resolved.\nHidden tests: 1 of 2 failed."]))
FAILED = EpisodeRecord.from_flat(dict(**vars(ID), final_diff="x", feedback=["Not resolved. A", "Not resolved. A", "Not resolved. B"]))


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


def test_carry_settings_choose_entry_kinds():
    assert kinds_for("both") == ("F", "X") and kinds_for("none") == () and kinds_for("all") == ("F", "X", "W")
    assert kinds_for("written") == ("W",)
    with pytest.raises(CarryError, match="unknown carry 'everything'"):
        kinds_for("everything")
    m = CarriedMemory()
    both = after_episode(after_episode(m, "t1", "it breaks", FAILED, "both"), "t2", "it is off", SOLVED, "both")
    # distinct feedback texts become corrections; only a resolved episode leaves a past solve
    assert [(e.kind, e.origin) for e in both.entries] == [("F", "t1"), ("F", "t1"), ("F", "t2"), ("X", "t2")]
    assert [i.id for i in both.items()] == ["F:carried#1", "F:carried#2", "F:carried#3", "X:carried#1"]
    assert "+LOYALTY_RATE = 0.17" in both.items()[-1].text and "Statement: it is off" in both.items()[-1].text
    assert after_episode(m, "t2", "s", SOLVED, "F").count("X") == 0
    assert after_episode(m, "t2", "s", SOLVED, "X").count() == 1
    assert after_episode(m, "t2", "s", SOLVED, "none").entries == ()
    assert m.entries == ()  # immutable: the old memory is unchanged
    assert both.tokens() > 0 and both.digest() != m.digest()


def test_write_into_appends_and_commits(mini, tmp_path):
    ws = repo.unbundle(mini["none"].bundle, tmp_path / "ws")
    before = (ws / PREFERENCES).read_text()
    head = repo.head_sha(ws)
    mem = after_episode(after_episode(CarriedMemory(), "t1", "s", FAILED, "both"), "t2", "s", SOLVED, "both")
    assert write_into(ws, mem) == [PREFERENCES, PAST_FIXES]
    prefs = (ws / PREFERENCES).read_text()
    assert prefs.startswith(before.rstrip("\n")) and "Not resolved. B" in prefs
    assert "+LOYALTY_RATE = 0.17" in (ws / PAST_FIXES).read_text()
    assert repo.head_sha(ws) != head and repo.worktree_diff(ws) == ""  # committed: the agent's diff stays its own
    # the appended corrections parse as separate entries of the preferences file
    assert sum("Feedback given on an earlier task" in e for e in split_entries(prefs)) == 3


@pytest.mark.parametrize("mode", ["full", "squashed", "memtool", "inject", "oracle"])
def test_each_delivery_applies_carried_memory_like_static_memory(mini, tmp_path, mode):
    mem = after_episode(CarriedMemory(), "earlier-task", "totals are off", SOLVED, "X")
    prep = build_delivery({"name": mode}).prepare(mini["none"], tmp_path, mem)
    files = {p.relative_to(prep.workspace).as_posix() for p in prep.workspace.rglob("*") if ".git" not in p.parts}
    prompt = "\n".join(prep.prompt_additions)
    reached = {
        "workspace": PAST_FIXES in files and "past solve: earlier-task" in (prep.workspace / PAST_FIXES).read_text(),
        "prompt": "past solve: earlier-task" in prompt,
        "search": prep.memory is not None
        and any(h.item.id == "X:carried#1" for h in prep.memory.index.search("loyalty rate 0.17 totals", 20)),
    }
    expected = {"full": {"workspace"}, "memtool": {"search"}, "inject": {"prompt"}}.get(mode, set())
    assert {k for k, v in reached.items() if v} == expected
    assert prep.info["carried_items"] == 1 and prep.info["carried_delivered"] == bool(expected)


def test_no_carried_memory_leaves_deliveries_as_before(mini, tmp_path):
    a = build_delivery({"name": "memtool"}).prepare(mini["X"], tmp_path / "a")
    b = build_delivery({"name": "memtool"}).prepare(mini["X"], tmp_path / "b", CarriedMemory())
    assert [i.id for i in a.memory.index.items] == [i.id for i in b.memory.index.items]
    assert "carried_items" not in a.info and "carried_items" not in b.info
