"""`sdebench plan`: episodes per cell over an expanded sweep, worst case and estimate; nothing is run."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from sdebench.runs import plan
from sdebench.runs.config import CONF_DIR
from sdebench.tasks.selection import select
from tests.runs.test_run import common, env
from tests.runs.test_run import tasks as tasks


def sdebench(args, cwd):
    return subprocess.run([sys.executable, "-m", "sdebench", *args], cwd=cwd, capture_output=True, text=True,
                          env={**env(), "SDEBENCH_TESTMODEL_KEY": "k"}, timeout=300)


def test_ablation_sweep_is_expanded_like_hydra(tmp_path, tasks):
    p, cfg = plan.build(["-m", f"tasks_dir={tasks}", f"results_dir={tmp_path / 'r'}", "experiment=ablation",
                         "agent=llm", "model=testmodel", "seed=0,1"], CONF_DIR)
    # 5 deliveries x 5 sources (hydra.sweeper.params) x 2 seeds (command line); one mini task per source
    assert p.jobs == 50
    assert len(p.cells) == 25 and all(c.episodes == 2 and c.to_run == 2 for c in p.cells.values())
    t = p.totals()
    assert t.episodes == 50 and t.worst_usd == pytest.approx(50 * 2.0)
    # by hand: 10 turns, first prompt 1500 + statement/3 + 1 tokens, growing 1400 a turn, $3/M in, $15/M out
    (task,) = select(tasks, source="K")
    first = 1500 + len(task.statement) // 3 + 1
    by_hand = (10 * first + 1400 * 45) * 3e-6 + 4000 * 15e-6
    assert p.cells[("squashed", "llm", "testmodel", "K")].estimate_usd == pytest.approx(2 * by_hand)
    fact = len("A fact about this project that matters here: ") + len(task.fact)
    oracle = (10 * (1500 + (len(task.statement) + fact) // 3 + 1) + 1400 * 45) * 3e-6 + 4000 * 15e-6
    assert p.cells[("oracle", "llm", "testmodel", "K")].estimate_usd == pytest.approx(2 * oracle)
    assert p.cells[("inject", "llm", "testmodel", "K")].estimate_usd > p.cells[("full", "llm", "testmodel", "K")].estimate_usd


def test_estimate_never_exceeds_the_cap(tasks, tmp_path):
    p, _ = plan.build([f"tasks_dir={tasks}", f"results_dir={tmp_path}", "agent=llm", "model=testmodel", "source=K",
                       "limits.max_cost_usd=0.05", "estimate.turns=40", "limits.max_turns=50"], CONF_DIR)
    (cell,) = p.cells.values()
    assert cell.estimate_usd == pytest.approx(0.05) and cell.worst_usd == pytest.approx(0.05)


def test_plan_runs_nothing_and_counts_recorded_episodes(tmp_path, tasks):
    base = [*common(tmp_path, tasks), "agent=oracle", "delivery=squashed"]
    r = sdebench(["plan", "-m", *base, "source=K,H"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "2 job(s), 2 episode(s), 2 to run" in r.stdout and "| squashed | oracle | none | K | 1 | 1 | 0.00 | 0.00 |" in r.stdout
    assert "worst case: $0.00" in r.stdout
    assert not (tmp_path / "results").exists() and not (tmp_path / "sweep").exists()
    assert sdebench(["run", *base, "source=K"], tmp_path).returncode == 0
    r = sdebench(["run", "-m", *base, "source=K,H", "--plan"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "2 episode(s), 1 to run (1 already recorded)" in r.stdout
    assert "| squashed | oracle | none | K | 1 | 0 |" in r.stdout
    assert len(list((tmp_path / "results").rglob("*.json"))) == 1  # still only the one run


def test_plan_states_the_budget_and_bad_input_is_one_line(tmp_path, tasks):
    r = sdebench(["plan", "-m", *common(tmp_path, tasks), "agent=llm", "model=testmodel", "source=K,H,F",
                  "budget_usd=3"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "worst case: $6.00" in r.stdout and "budget_usd=3: episodes beyond it are not started (at least 1 run in full)" in r.stdout
    r = sdebench(["plan", *common(tmp_path, tasks), "agent=nosuch"], tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such agent" in r.stderr, r.stderr


def test_the_plan_counts_episodes_per_competency(tmp_path, tasks):
    store = tmp_path / "tasks"
    shutil.copytree(tasks, store)
    (toml,) = [p for p in store.glob("*/task.toml") if "-K" in p.parent.name]
    toml.write_text(toml.read_text().replace('competency = "recall"', 'competency = "conflict"'))
    p, cfg = plan.build(["-m", f"tasks_dir={store}", f"results_dir={tmp_path / 'r'}", "agent=oracle",
                         "delivery=squashed,oracle"], CONF_DIR)
    assert {c: (cell.episodes, cell.to_run) for c, cell in p.competencies.items()} == {"recall": (8, 8), "conflict": (2, 2)}
    text = plan.render(p, cfg)
    assert "| conflict | hard | 2 | 2 | 0.00 | 0.00 |" in text and "| recall | recall | 8 | 8 |" in text
    p, _ = plan.build([f"tasks_dir={store}", f"results_dir={tmp_path / 'r'}", "agent=oracle", "select.tier=hard"],
                      CONF_DIR)
    assert dict(p.competencies).keys() == {"conflict"} and p.totals().episodes == 1
