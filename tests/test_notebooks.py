"""Every notebook in notebooks/ runs top to bottom (so none rots), is committed without outputs,
and imports from ``roofline`` only (a notebook about an optional extra also from that extra's
package: capture.ipynb from torch, skipped without it except under CI=true). Executed with
nbclient on the ``python3`` kernel (ipykernel), which jupyter_client starts with this
interpreter."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
# Collected from the folder itself, so a notebook added to notebooks/ is executed by the test
# below without anyone listing it; EXPECTED only guards against the folder going missing.
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = {"tour.ipynb", "capture.ipynb"}
# notebook -> the optional extra's package it may import besides roofline
EXTRAS = {"capture.ipynb": "torch"}


def _ids(path: Path) -> str:
    return path.name


def _code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_notebooks_are_found():
    assert EXPECTED <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for index, cell in enumerate(_code_cells(nb)):
        assert cell.outputs == [], f"{path.name}: code cell {index} has stored outputs"
        assert cell.execution_count is None, f"{path.name}: code cell {index} has a count"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_imports_from_roofline_only(path):
    nb = nbformat.read(path, as_version=4)
    for cell in _code_cells(nb):
        assert "sys.path" not in cell.source, f"{path.name}: no sys.path tricks"
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            allowed = {"roofline", EXTRAS.get(path.name, "roofline")}
            for module in modules:
                assert module.split(".")[0] in allowed, f"{path.name} imports {module}"


@pytest.mark.slow  # a kernel start and every chart of the tour: ~15-20 s
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_runs_top_to_bottom(path, isolated_user_hwdb):
    """Executes a copy in memory (the file is never rewritten) from the notebook's folder."""
    from nbclient import NotebookClient

    extra = EXTRAS.get(path.name)
    if extra is not None and not os.environ.get("CI"):  # CI installs the extras: there, run
        pytest.importorskip(extra, reason=f"{path.name} needs the {extra} extra")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    outputs = [out for cell in _code_cells(nb) for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    kinds = [key for out in outputs for key in out.get("data", {})]
    if path.name == "tour.ipynb":
        assert kinds.count("image/png") >= 6, "the charts are shown inline"
        assert kinds.count("text/html") >= 3, "reports are shown as HTML tables"
    if path.name == "capture.ipynb":  # the captured model's chart, then the changed one's
        assert kinds.count("image/png") >= 2 and kinds.count("text/html") >= 1
