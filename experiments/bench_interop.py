"""Print interop throughput: BugsInPy import/export rows per second, verifier and env step latency,
and the per-task cost of the SWE-bench and Harbor exports (full node-id collection included).

    python experiments/bench_interop.py [--rows 200] [--sandbox unsafe_local] [--export-tasks 5]

Builds a synthetic BugsInPy-v2 parquet of `--rows` single-file tasks in a temp dir, imports it,
exports it back, grades a few fixed solutions with the BugsInPy verifier and runs a few env steps;
then exports `--export-tasks` committed tasks as a SWE-bench task repo and as Harbor dirs.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def row(i: int) -> tuple[str, bytes]:
    """One synthetic dataset row."""
    files = {
        "instruction.md": f"Task {i}: add() is wrong.\n".encode(),
        "metadata.json": json.dumps({"project": "bench"}).encode(),
        "task.toml": b'version = "1.0"\n',
        "environment/Dockerfile": b"FROM python:3.10-slim\n",
        "environment/solution.py": (BUGGY + f"\nTASK = {i}\n").encode(),
        "tests/test.sh": b"#!/bin/bash\n",
        "tests/test_solution.py": TEST.encode(),
        "tests/test_state.py": b"",
        "tests/config.json": b"{}",
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tf:
        for rel, data in files.items():
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return f"bench-{i:04d}", out.getvalue()


def main() -> int:
    """Run the benchmark and print the figures."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sdebench.env.environment import CodeFixEnv, TaskStore
    from sdebench.interop import bugsinpy as bp
    from sdebench.interop.bugsinpy_verifier import grade_bugsinpy
    from sdebench.sandbox import make_factory
    from sdebench.tasks import repo as repo_mod
    from sdebench.tasks.record import load

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--grades", type=int, default=5)
    ap.add_argument("--sandbox", default="unsafe_local")
    ap.add_argument("--export-tasks", type=int, default=5, help="committed tasks to export (0: skip)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-interop-") as tmp:
        tmp = Path(tmp)
        rows = [row(i) for i in range(args.rows)]
        pq.write_table(pa.table({"path": [r[0] for r in rows], "task_binary": [r[1] for r in rows]}), tmp / "t.parquet")
        t = time.perf_counter()
        report = bp.import_parquet(tmp / "t.parquet", tmp / "tasks")
        imp = time.perf_counter() - t
        print(f"import: {len(report.done)} rows in {imp:.2f}s ({len(report.done) / imp:.1f} rows/s)")
        tasks = [load(tmp / "tasks" / n) for n in report.done]
        t = time.perf_counter()
        bp.export_parquet(tasks, tmp / "out.parquet")
        exp = time.perf_counter() - t
        print(f"export: {len(tasks)} tasks in {exp:.2f}s ({len(tasks) / exp:.1f} tasks/s)")
        factory = make_factory({"backend": args.sandbox, "tasks_dir": str(tmp / "tasks")})
        times = []
        for task in tasks[: args.grades]:
            ws = repo_mod.unbundle(task.bundle, tmp / "ws" / task.id)
            (ws / "solution.py").write_text(FIXED)
            t = time.perf_counter()
            g = grade_bugsinpy(task, ws, factory)
            times.append(time.perf_counter() - t)
            assert g.resolved, g.feedback
        print(f"bugsinpy verifier ({args.sandbox}): median {statistics.median(times):.2f}s per grade over {len(times)}")
        env = CodeFixEnv(TaskStore(tmp / "tasks"), factory, work_root=tmp, allow_unsafe=args.sandbox == "unsafe_local")
        resets, steps = [], []
        for task in tasks[: args.grades]:
            t = time.perf_counter()
            env.reset(task_id=task.id)
            resets.append(time.perf_counter() - t)
            t = time.perf_counter()
            env.step({"patched_code": FIXED})
            steps.append(time.perf_counter() - t)
        env.close()
        print(f"env ({args.sandbox}): median reset {statistics.median(resets):.2f}s, step {statistics.median(steps):.2f}s")
        if args.export_tasks:
            bench_exports(ROOT / "tasks", tmp, args.export_tasks, factory)
    return 0


def bench_exports(tasks_dir: Path, tmp: Path, n: int, factory) -> None:
    """Per-task time of full node-id collection, the SWE-bench task repo and the Harbor export."""
    from sdebench.interop import harbor, nodeids, swebench
    from sdebench.tasks.record import select

    tasks = [t for t in select(tasks_dir, variant="0") if t.grader == "sdebench"][:n]
    t = time.perf_counter()
    for task in tasks:
        nodeids.full_ids(task, factory)
    ids_s = (time.perf_counter() - t) / len(tasks)
    t = time.perf_counter()
    w = swebench.export_task_repo(tasks, tmp / "swe", factory)
    swe_s = (time.perf_counter() - t) / len(tasks)
    assert w.count == len(tasks), w.skipped
    t = time.perf_counter()
    for task in tasks:
        harbor.export_task(task, tmp / "harbor", factory)
    harbor_s = (time.perf_counter() - t) / len(tasks)
    print(f"exports over {len(tasks)} tasks: node ids {ids_s:.2f}s/task, SWE-bench task repo {swe_s:.2f}s/task, "
          f"Harbor {harbor_s:.2f}s/task (each export collects the ids itself)")


if __name__ == "__main__":
    sys.exit(main())
