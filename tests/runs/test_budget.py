"""The sweep budget: a ledger shared by parallel processes is never exceeded; a sweep stops before it."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time

import pytest

from sdebench.runs import results
from sdebench.runs.budget import BudgetSpent, Ledger
from sdebench.testing import testmodel
from tests.runs.test_run import common, env
from tests.runs.test_run import tasks as tasks

KEY_ENV = "SDEBENCH_TESTMODEL_KEY"


def spend(path: str, budget: float, out, lease_s: float | None = None) -> None:
    """Reserve 1.0, hold it a moment, settle at 0.7, until the ledger refuses; put how many ran."""
    ledger = Ledger(__import__("pathlib").Path(path), budget, lease_s)
    n = 0
    while True:
        try:
            token = ledger.reserve(1.0, f"episode {n}")
        except BudgetSpent:
            break
        time.sleep(0.02)
        ledger.settle(token, 0.7)
        n += 1
    out.put(n)


@pytest.mark.parametrize("lease_s", [None, 5.0], ids=["flock", "lease"])
def test_two_processes_never_exceed_the_budget(tmp_path, lease_s):
    path = str(tmp_path / ".budget" / "s.json")
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=spend, args=(path, 10.0, out, lease_s)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    ran = [out.get(timeout=5) for _ in procs]
    state = json.loads((tmp_path / ".budget" / "s.json").read_text())
    assert state["reserved"] == {}
    assert state["episodes"] == sum(ran)
    assert state["spent_usd"] == pytest.approx(0.7 * sum(ran))
    # each start reserved 1.0 with spent + reserved <= 10, so no more than 13 can have started
    # (0.7 * 13 + 1.0 > 10 stops the 14th), and the refusals came only once spent passed 9.0
    assert 9.0 < state["spent_usd"] <= 10.0 and sum(ran) == 13
    assert not list((tmp_path / ".budget").glob("*.lease*"))  # the ledger's lease is released after each update


def test_a_reservation_past_the_budget_is_refused_with_one_line(tmp_path):
    ledger = Ledger(tmp_path / "l.json", 1.5)
    token = ledger.reserve(1.0, "a")
    with pytest.raises(BudgetSpent) as e:
        ledger.reserve(1.0, "b")
    assert "\n" not in str(e.value) and "budget_usd=1.5" in str(e.value)
    ledger.settle(token, 0.25)
    ledger.reserve(1.0, "c")  # 0.25 spent + 1.0 fits in 1.5
    assert ledger.state()["spent_usd"] == pytest.approx(0.25)


def test_parallel_sweep_stops_before_the_budget(tmp_path, tasks):
    """Four episodes of $0.30 each at a $0.50 cap and a $1.00 budget: exactly two can start, in any order
    (two reservations fill the budget; after one settles, 0.30 + 0.50 + 0.50 no longer fits)."""
    step = {"tool": "submit", "arguments": {}, "usage": {"prompt_tokens": 100_000, "completion_tokens": 10},
            "repeat": True}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([step]))
    with testmodel.subprocess_server(script) as base:
        r = subprocess.run(
            [sys.executable, "-m", "sdebench.run", "-m", *common(tmp_path, tasks), "hydra/launcher=parallel",
             "agent=llm", "model=testmodel", f"model.api_base={base}", "delivery=squashed", "source=K,H,F,none",
             "max_interventions=0", "limits.max_cost_usd=0.5", "budget_usd=1.0"],
            cwd=tmp_path, capture_output=True, text=True, env={**env(), KEY_ENV: "k"}, timeout=600)
    assert r.returncode == 1, r.stderr[-3000:]
    assert "2 episode(s) not run: the sweep budget is spent (budget_usd=1)" in r.stderr, r.stderr[-3000:]
    recs = [results.read_record(p) for p in (tmp_path / "results").rglob("*.json")]
    recs = [x for x in recs if x is not None]
    assert len(recs) == 2 and all(x.usage.cost_usd == pytest.approx(0.30015) for x in recs)
    (ledger,) = (tmp_path / "results" / ".budget").glob("*.json")
    state = json.loads(ledger.read_text())
    assert state["episodes"] == 2 and state["reserved"] == {}
    assert state["spent_usd"] == pytest.approx(sum(x.usage.cost_usd for x in recs)) and state["spent_usd"] <= 1.0


def test_bad_budget_is_one_start_up_line(tmp_path, tasks):
    r = subprocess.run([sys.executable, "-m", "sdebench.run", *common(tmp_path, tasks), "agent=oracle", "source=K",
                        "budget_usd=lots"], cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=300)
    assert r.returncode == 2 and "budget_usd must be a number" in r.stderr, r.stderr
