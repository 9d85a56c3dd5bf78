"""A tiny, complete task dir for tests, benchmarks and examples (no generator needed).

The repo is a small `shop` package whose member discount is missing. The fact: members get 7 %
off. The conventional guess (10 %) passes the visible repro test but not the hidden tests.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sdebench.generation.observe import record_task
from sdebench.tasks import repo
from sdebench.tasks.commits import Commit
from sdebench.tasks.record import CONVENTIONAL_PATCH, ORACLE_PATCH, Task, Tests, save_meta

TASK_ID = "sample-discount-v0-K"

PRICING_BUGGY = '''"""Prices."""


def member_price(total: float) -> float:
    """The price a member pays for an order of `total`."""
    return round(total, 2)
'''

PRICING_FIXED = '''"""Prices."""

MEMBER_RATE = {rate}


def member_price(total: float) -> float:
    """The price a member pays for an order of `total`."""
    return round(total * (1 - MEMBER_RATE), 2)
'''

CART = '''"""Carts."""


def cart_total(items: list[tuple[str, float, int]]) -> float:
    """Sum of price x quantity."""
    return round(sum(price * qty for _, price, qty in items), 2)


def count(items: list[tuple[str, float, int]]) -> int:
    """Number of units in the cart."""
    return sum(qty for _, _, qty in items)
'''

CONFTEST = """import pytest


@pytest.fixture
def items():
    return [("pen", 1.5, 4), ("book", 12.0, 1)]
"""

TEST_CART = """from shop.cart import cart_total, count


def test_total(items):
    assert cart_total(items) == 18.0


def test_count(items):
    assert count(items) == 5
"""

TEST_PRICING = """from shop.pricing import member_price


def test_members_get_a_discount():
    assert member_price(100.0) < 100.0
"""

HIDDEN_PRICING = """from shop.pricing import member_price


def test_member_rate_exact():
    assert member_price(100.0) == 93.0


def test_member_rate_other_total():
    assert member_price(250.0) == 232.5
"""

DOC = """# Pricing

Members get 7% off every order (decided with finance, see the 2023 pricing review).
"""

PYTEST_INI = "[pytest]\ntestpaths = tests\n"


def head_files() -> dict[str, str]:
    """The files of the buggy HEAD."""
    return {
        "shop/__init__.py": "",
        "shop/pricing.py": PRICING_BUGGY,
        "shop/cart.py": CART,
        "tests/conftest.py": CONFTEST,
        "tests/test_cart.py": TEST_CART,
        "tests/test_pricing.py": TEST_PRICING,
        "docs/pricing.md": DOC,
        "pytest.ini": PYTEST_INI,
        "README.md": "# shop\n",
    }


HIDDEN_FILE = "tests/test_pricing_hidden.py"
F2P = ("tests/test_pricing.py::test_members_get_a_discount",)
P2P = ("tests/test_cart.py::test_total", "tests/test_cart.py::test_count")
H2P = (f"{HIDDEN_FILE}::test_member_rate_exact", f"{HIDDEN_FILE}::test_member_rate_other_total")


def write_sample_task(dest: Path, sandbox_cfg: dict | None = None) -> Task:
    """Write the sample task dir at `dest` (repo.bundle, task.toml, hidden/, observed/, expected.json,
    patches); return it loaded. The oracle's observations are recorded in a sandbox of `sandbox_cfg`
    (default: unsafe_local: the sample's own code)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    head = head_files()
    commits = [
        Commit("Start the shop package", {k: v for k, v in head.items() if k != "docs/pricing.md"}),
        Commit("Document pricing", {"docs/pricing.md": DOC}),
    ]
    with tempfile.TemporaryDirectory(prefix="sdebench-sample-") as tmp:
        sha = repo.build(Path(tmp) / "repo", commits)
        repo.bundle(Path(tmp) / "repo", dest / "repo.bundle")
    pricing = "shop/pricing.py"
    (dest / ORACLE_PATCH).write_text(
        repo.diff_files({pricing: PRICING_BUGGY}, {pricing: PRICING_FIXED.format(rate=0.07)})
    )
    (dest / CONVENTIONAL_PATCH).write_text(
        repo.diff_files({pricing: PRICING_BUGGY}, {pricing: PRICING_FIXED.format(rate=0.10)})
    )
    fixed = {pricing: PRICING_FIXED.format(rate=0.07)}
    limit = record_task(dest, head, fixed, {HIDDEN_FILE: HIDDEN_PRICING}, F2P + P2P, H2P, sandbox_cfg)
    task = Task(
        id=TASK_ID,
        family="sample-discount",
        variant=0,
        source="K",
        bottleneck="knowledge-missing",
        statement="Members are charged the full price; they should get their discount.",
        fact="Members get 7% off every order.",
        fact_tokens=("7%", "0.07", "7 %"),
        conventional_guess="a 10% member discount",
        modules=3,
        commits=len(commits),
        head_sha=sha,
        tests=Tests(fail_to_pass=F2P, pass_to_pass=P2P, hidden_to_pass=H2P),
        memory_artifacts=("docs/pricing.md",),
        test_files=("tests/conftest.py", "tests/test_cart.py", "tests/test_pricing.py"),
        test_time_limit_s=limit,
        path=dest,
    )
    save_meta(task, dest)
    return task


def checkout(task: Task, dest: Path, patch: str = "") -> Path:
    """A full checkout of `task` at `dest` (history included) with `patch` applied to the working tree."""
    repo.unbundle(task.bundle, Path(dest))
    repo.apply_patch(Path(dest), patch)
    return Path(dest)
