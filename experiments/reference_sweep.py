"""Run the committed reference sweep and record its timing: every delivery x source x reference
agent over one family, in the bubblewrap sandbox with 2 joblib workers.

    python experiments/reference_sweep.py [--family billing-rounding] [--out experiments/reference]

Writes `<out>/episodes/` (episode records and trajectories) and `<out>/sweep.json` (the command,
start and end time, wall seconds). FINDINGS.md is then regenerated from them with
`python -m sdebench.report --findings`. Prints the sweep's wall time and episode count.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(family: str, results_dir: Path, sweep_dir: Path) -> list[str]:
    """The sweep command line."""
    return [sys.executable, "-m", "sdebench.run", "-m", "experiment=reference_matrix", "hydra/launcher=parallel",
            f"select.family={family}", "select.variant=0", f"tasks_dir={ROOT / 'tasks'}",
            f"results_dir={results_dir}", f"hydra.sweep.dir={sweep_dir}"]


def main() -> int:
    """Run the sweep into a fresh results dir and write sweep.json beside it."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="billing-rounding")
    ap.add_argument("--out", type=Path, default=ROOT / "experiments" / "reference")
    a = ap.parse_args()
    res = a.out / "episodes"
    if res.exists():
        shutil.rmtree(res)
    with tempfile.TemporaryDirectory() as sweep:
        cmd = command(a.family, res, Path(sweep))
        started = time.time()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        ended = time.time()
    if r.returncode != 0:
        print(r.stderr[-2000:], file=sys.stderr)
        return r.returncode
    shown = ["python", *cmd[1:]]
    # as typed from the repo root; the temporary sweep dir is not part of the recipe
    shown = [s.replace(str(ROOT) + "/", "") for s in shown if not s.startswith("hydra.sweep.dir=")]
    meta = {"command": " ".join(shown), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "wall_s": round(ended - started, 1), "sandbox": "local (bubblewrap)", "launcher": "parallel (2 workers)"}
    (a.out / "sweep.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    n = len(list(res.rglob("*.json")))
    print(f"{n} episodes in {meta['wall_s']} s ({meta['wall_s'] / max(n, 1):.2f} s per episode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
