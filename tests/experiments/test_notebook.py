"""experiments/analysis.ipynb executes top to bottom (nbclient, a real kernel) against a real sweep."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "experiments" / "analysis.ipynb"


def documented_command() -> str:
    """The one command the docs give for executing the notebook (README and docs/analysis.md agree)."""
    from tests.docblocks import blocks, doc_files

    lines = {line.split("  #")[0].strip() for p in doc_files() for b in blocks(p) if b.lang == "bash"
             for line in b.text.splitlines() if "jupyter execute" in line}
    assert len(lines) == 1, lines
    return lines.pop()


@pytest.mark.slow
def test_the_documented_command_runs_the_notebook_on_a_real_sweep(small_sweep, tmp_path):
    """Run as the docs say, from a repository root, on a relative results dir: the executed copy lands in
    results/, every table and plot is there, and the notebook itself is not rewritten."""
    import nbformat

    work = tmp_path / "repo"  # the layout of a checkout: experiments/analysis.ipynb and results/
    (work / "experiments").mkdir(parents=True)
    shutil.copy(NOTEBOOK, work / "experiments" / NOTEBOOK.name)
    shutil.copytree(small_sweep, work / "results")
    committed = NOTEBOOK.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PWD": str(work)}  # what a shell in `work` passes down
    r = subprocess.run(["bash", "-c", documented_command()], cwd=work, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (work / "experiments" / NOTEBOOK.name).read_bytes() == committed and NOTEBOOK.read_bytes() == committed
    nb = nbformat.read(work / "results" / "analysis.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"12 episodes from {(work / 'results').resolve()}" in text
    tables = [o["data"]["text/html"] for o in outputs if o.output_type == "execute_result" and "text/html" in o.get("data", {})]
    # headline, by cell, gaps, paired comparisons, tasks needed, by bottleneck, by family,
    # intervention distribution, validity
    assert len(tables) == 9 and "conventional" in tables[0] and "conventional" in tables[1]
    assert "oracle - squashed" in tables[2] and "oracle - squashed" in tables[3]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) == 7
    # a results dir that is not there stops the first cell with its name, never 0 episodes
    shutil.rmtree(work / "results")
    (work / "results").mkdir()
    r = subprocess.run(["bash", "-c", documented_command().replace("SDEBENCH_RESULTS=results", "SDEBENCH_RESULTS=nope")],
                       cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and f"no such dir {work.resolve() / 'nope'}" in r.stderr


def test_notebook_is_stored_without_outputs():
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow
def test_notebook_defaults_to_the_committed_reference_sweep(monkeypatch):
    import nbclient
    import nbformat

    from sdebench.runs import results

    monkeypatch.delenv("SDEBENCH_RESULTS", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "experiments")}}).execute()
    first = nb.cells[1]["outputs"][0]["text"]
    n = len(results.read_records(ROOT / "experiments" / "reference" / "episodes"))
    assert first.startswith(f"{n} episodes from ") and first.rstrip().endswith("experiments/reference/episodes")
