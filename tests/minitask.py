"""Test fixtures: a small hand-built task family ("mini-pricing") emitted in all five placements.

The bug: a loyalty discount constant regressed from 0.17 to 0.10. The fact ("the loyalty
discount is 17 percent") lives in history (H), docs (K), .agent/preferences.md (F),
.agent/past_fixes.md (X) or nowhere (none). The conventional guess (15 percent) passes the repro
test but fails the hidden one.
"""

from __future__ import annotations

from pathlib import Path

from sdebench.generation.observe import record_task
from sdebench.generation.spec import Memory
from sdebench.tasks import repo
from sdebench.tasks.commits import Commit
from sdebench.tasks.record import BUNDLE, CONVENTIONAL_PATCH, ORACLE_PATCH, Task, Tests, save_meta

FAMILY = "mini-pricing"
FACT = "The loyalty discount is 17 percent (rate 0.17), set by finance."
FACT_TOKENS = ("0.17", "17 percent", "17%", "seventeen percent")
ROOT = Path(__file__).resolve().parent.parent

CODE = '''"""Prices after discounts."""

LOYALTY_RATE = {rate}


def discounted(price: float) -> float:
    """The price a loyalty member pays."""
    return round(price * (1 - LOYALTY_RATE), 2)


def total(prices: list[float]) -> float:
    """The sum of discounted prices."""
    return round(sum(discounted(p) for p in prices), 2)
'''
INIT = '"""A tiny shop."""\n'
VISIBLE_TESTS = '''from shop.pricing import discounted, total


def test_zero_price():
    assert discounted(0.0) == 0.0


def test_total_of_nothing():
    assert total([]) == 0.0


def test_loyalty_discount_is_more_than_ten_percent():
    assert discounted(100.0) < 90.0
'''
HIDDEN_TESTS = '''from shop.pricing import discounted


def test_loyalty_rate_exact():
    assert discounted(100.0) == 83.0


def test_loyalty_rate_small():
    assert discounted(10.0) == 8.3
'''
TEST_FILE = "tests/test_pricing.py"
HIDDEN_FILE = "tests/test_pricing_hidden.py"
F2P = (f"{TEST_FILE}::test_loyalty_discount_is_more_than_ten_percent",)
P2P = (f"{TEST_FILE}::test_zero_price", f"{TEST_FILE}::test_total_of_nothing")
H2P = (f"{HIDDEN_FILE}::test_loyalty_rate_exact", f"{HIDDEN_FILE}::test_loyalty_rate_small")
ARTIFACTS = ("docs/pricing.md", ".agent/preferences.md", ".agent/past_fixes.md")


def _memory(source: str) -> dict[str, str]:
    mem = Memory()
    mem.header("docs/pricing.md", "# Pricing\n\nPrices are in euros and rounded to cents.")
    mem.add("docs/pricing.md", "Totals are the sum of the discounted line prices.")
    mem.header(".agent/preferences.md", "# Preferences")
    mem.add(".agent/preferences.md", "- Keep functions small and typed.")
    mem.add(".agent/preferences.md", "- Run the tests before submitting.")
    mem.header(".agent/past_fixes.md", "# Past fixes")
    mem.add(".agent/past_fixes.md", "Fixed a crash in total() for an empty cart by starting the sum at 0.")
    fact_entry = {
        "K": ("docs/pricing.md", "The loyalty discount is 17 percent; finance decided it, do not change it."),
        "F": (".agent/preferences.md", "- The user corrected me: the loyalty discount is 17 percent, not a round number."),
        "X": (".agent/past_fixes.md", "Restored the loyalty discount to 17 percent after a refactor reset it."),
    }.get(source)
    if fact_entry:
        mem.add(*fact_entry)
    return mem.render()


def build_task(out: Path, source: str) -> Task:
    """Emit one placement of the mini-pricing family into `out/<task id>`."""
    tid = f"{FAMILY}-v0-{source}"
    task_dir = out / tid
    work = out / f".build-{tid}"
    base = {"shop/__init__.py": INIT, TEST_FILE: VISIBLE_TESTS}
    if source == "H":
        history = [
            Commit("Add pricing module", {**base, "shop/pricing.py": CODE.format(rate="0.05")}),
            Commit("Set loyalty discount to 17 percent as agreed with finance", {"shop/pricing.py": CODE.format(rate="0.17")}),
            Commit("Tidy pricing constants", {"shop/pricing.py": CODE.format(rate="0.10")}),
        ]
    else:
        history = [
            Commit("Add pricing module", {**base, "shop/pricing.py": CODE.format(rate="0.05")}),
            Commit("Adjust loyalty discount", {"shop/pricing.py": CODE.format(rate="0.08")}),
            Commit("Tidy pricing constants", {"shop/pricing.py": CODE.format(rate="0.10")}),
        ]
    history.append(Commit("Write down project notes", _memory(source)))
    head = repo.build(work, history)
    task_dir.mkdir(parents=True)
    repo.bundle(work, task_dir / BUNDLE)
    buggy = {"shop/pricing.py": CODE.format(rate="0.10")}
    (task_dir / ORACLE_PATCH).write_text(repo.diff_files(buggy, {"shop/pricing.py": CODE.format(rate="0.17")}))
    (task_dir / CONVENTIONAL_PATCH).write_text(repo.diff_files(buggy, {"shop/pricing.py": CODE.format(rate="0.15")}))
    head_tree = repo.read_tree(work)
    limit = record_task(task_dir, head_tree, {"shop/pricing.py": CODE.format(rate="0.17")}, {HIDDEN_FILE: HIDDEN_TESTS},
                        F2P + P2P, H2P)
    task = Task(
        id=tid,
        family=FAMILY,
        variant=0,
        source=source,
        bottleneck="knowledge-missing",
        statement="Loyalty members are charged too much: the loyalty discount looks wrong since the last refactor.",
        fact=FACT,
        fact_tokens=FACT_TOKENS,
        conventional_guess="a 15 percent discount",
        modules=2,
        commits=len(history),
        head_sha=head,
        tests=Tests(F2P, P2P, H2P),
        memory_artifacts=ARTIFACTS,
        test_files=(TEST_FILE,),
        test_time_limit_s=limit,
        path=task_dir,
    )
    save_meta(task, task_dir)
    import shutil

    shutil.rmtree(work)
    return task


def build_all(out: Path) -> dict[str, Task]:
    """Emit mini-pricing in all five placements into `out`; tasks by source."""
    return {source: build_task(out, source) for source in ("H", "K", "F", "X", "none")}


def repo_tasks() -> list[Path]:
    """The emitted benchmark tasks of this checkout (tasks/)."""
    root = ROOT / "tasks"
    return sorted(p.parent for p in root.glob("*/task.toml")) if root.is_dir() else []
