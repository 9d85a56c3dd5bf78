"""experiments/analysis.ipynb executes top to bottom (nbclient, a real kernel) against a real sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "experiments" / "analysis.ipynb"


@pytest.mark.slow
def test_notebook_runs_on_a_real_sweep(small_sweep, monkeypatch):
    import nbclient
    import nbformat

    monkeypatch.setenv("SDEBENCH_RESULTS", str(small_sweep))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "experiments")}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"12 episodes from {small_sweep}" in text
    tables = [o["data"]["text/html"] for o in outputs if o.output_type == "execute_result" and "text/html" in o.get("data", {})]
    # headline, by cell, gaps, paired comparisons, tasks needed, by bottleneck, by family,
    # intervention distribution, validity
    assert len(tables) == 9 and "conventional" in tables[0] and "conventional" in tables[1]
    assert "oracle - squashed" in tables[2] and "oracle - squashed" in tables[3]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) == 7


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
