"""Every chapter notebook runs top to bottom (quick scale), once per CI run.

Each notebook executes in a fresh kernel with ``notebooks/`` as its working directory, as the book
build would run it. With ``RLTUTOR_EXECUTED_DIR`` set, the executed copy (outputs and widget state
included) is saved there, and ``scripts/book.sh`` builds the book from those copies instead of
executing every notebook a second time. Marked ``notebooks``: the test command runs them on their
own, two at a time.
"""

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    manager = pytest.importorskip("jupyter_client.manager")
    nb = nbformat.read(path, as_version=4)
    # Kernels talk over IPC sockets in a private folder, not TCP ports: two kernels started at the same
    # moment (two test workers) can otherwise race for a port, and a request then waits forever.
    km = manager.KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=600,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"{path.name}: a cell failed:\n{str(e)[-3000:]}", pytrace=False)
    seconds = time.perf_counter() - t0
    out = os.environ.get("RLTUTOR_EXECUTED_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(out) / path.name)
    print(f"{path.name}: {seconds:.0f} s")
