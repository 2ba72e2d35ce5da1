"""Every chapter notebook runs top to bottom (quick scale), once per CI run.

Each notebook executes in a fresh kernel with ``notebooks/`` as its working directory, as the book
build would run it. With ``RLTUTOR_EXECUTED_DIR`` set, the executed copy (outputs and widget state
included) is saved there, and ``scripts/book.sh`` builds the book from those copies instead of
executing every notebook a second time. Marked ``notebooks``: the test command runs them on their
own, two at a time.

While a notebook runs, an IPython startup file in the kernel records every figure it renders (see
``FIGURE_HOOK``): the smallest text drawn, in pixels at 100% (font size in points x dpi / 72), and the
y-range of every shaded band. The test then asks that

* no text in a figure is under ``MIN_TEXT_PX`` as shown, the figure scaled to the book's text column
  (``COLUMN_PX``) where it is wider (``tests/test_browser.py`` checks it again with the scale each image
  is really shown at, from the records saved as ``NN.figures.json`` beside the executed notebook);
* no band of a bounded measure leaves its bounds: a y-axis labelled "(fraction ...)" shows a band
  inside [0, 1], one labelled "(tokens)" or "(calls)" a band >= 0 (``rltutor.views.plots.plot_band``
  clips a band to the ``bounds`` it is given).
"""

import base64
import hashlib
import json
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MIN_TEXT_PX = 9.0  # the smallest text a reader can read in a figure, as shown
COLUMN_PX = 690  # width of the book's text column at a 1280 px window (measured in Chromium)
FIGURE_HOOK = r"""# Installed by tests/test_notebooks.py as an IPython startup file of the kernel that runs a chapter:
# every figure the kernel renders (the inline backend's PNGs, savefig) appends one JSON line to the
# file named by RLTUTOR_FIGURE_RECORDS: the PNG's SHA-1, its dpi and width, the smallest drawn text in
# pixels at 100% (font size in points x dpi / 72) and every shaded band's y-range with its axis label.
import hashlib as _hashlib
import io as _io
import json as _json
import os as _os

import matplotlib as _mpl
import numpy as _np
import matplotlib.backend_bases as _bb
import matplotlib.collections as _mc
import matplotlib.text as _mt

_RECORDS = _os.environ["RLTUTOR_FIGURE_RECORDS"]
_drawn = []
_print_figure = _bb.FigureCanvasBase.print_figure
_text_draw = _mt.Text.draw


def _record_text_draw(self, renderer, *args, **kwargs):
    if self.get_visible() and self.get_text().strip():
        _drawn.append((float(self.get_fontsize()), self.get_text().strip()[:60]))
    return _text_draw(self, renderer, *args, **kwargs)


def _bands(fig):
    out = []
    for ax in fig.axes:
        for c in ax.collections:
            if not isinstance(c, _mc.PolyCollection) or not c.get_visible():
                continue
            ys = [p.vertices[:, 1] for p in c.get_paths() if len(p.vertices)]
            if not ys:
                continue
            y = _np.concatenate(ys)
            y = y[_np.isfinite(y)]
            if y.size:
                band = {"ylabel": ax.get_ylabel(), "title": ax.get_title()}
                out.append({**band, "ymin": float(y.min()), "ymax": float(y.max())})
    return out


def _record_print_figure(self, filename, *args, **kwargs):
    del _drawn[:]
    result = _print_figure(self, filename, *args, **kwargs)
    dpi = kwargs.get("dpi", args[0] if args else None)
    if dpi is None:
        dpi = _mpl.rcParams["savefig.dpi"]
    if dpi == "figure":
        dpi = self.figure.dpi
    record = {"dpi": float(dpi), "texts": len(_drawn), "bands": _bands(self.figure)}
    if _drawn:
        pt, text = min(_drawn)
        record.update(min_pt=pt, min_px=pt * float(dpi) / 72, smallest=text)
    if isinstance(filename, _io.BytesIO):
        data = filename.getvalue()
        record["sha1"] = _hashlib.sha1(data).hexdigest()
        if data[:8] == b"\x89PNG\r\n\x1a\n":
            record["width_px"] = int.from_bytes(data[16:20], "big")
    with open(_RECORDS, "a") as f:
        f.write(_json.dumps(record) + "\n")
    return result


_mt.Text.draw = _record_text_draw
_bb.FigureCanvasBase.print_figure = _record_print_figure
"""


def shown_px(record: dict) -> float:
    """The smallest text of a recorded figure as shown, the image scaled to fit the text column."""
    scale = min(1.0, COLUMN_PX / record["width_px"]) if record.get("width_px") else 1.0
    return record["min_px"] * scale


def bounded(ylabel: str) -> tuple[float, float] | None:
    """The bounds a y-axis label promises: "(fraction ...)" means [0, 1], a count ("(tokens)", "(calls)")
    means >= 0; None if it promises none."""
    if "(fraction" in ylabel:
        return (0.0, 1.0)
    if "(tokens)" in ylabel or "(calls)" in ylabel:
        return (0.0, float("inf"))
    return None


def figure_records(nb, lines: list[str]) -> list[dict]:
    """The hook's records in page order: each image output of the notebook with its record (cell index
    added), then the figures rendered elsewhere (inside a widget's saved output)."""
    by_sha = {}
    for line in lines:
        record = json.loads(line)
        by_sha.setdefault(record.get("sha1"), record)
    shown, seen = [], set()
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get("image/png")
            if data is None:
                continue
            sha = hashlib.sha1(base64.b64decode(data)).hexdigest()
            if sha in by_sha:
                shown.append({**by_sha[sha], "cell": index})
                seen.add(sha)
    return shown + [{**r, "cell": None} for sha, r in by_sha.items() if sha not in seen]


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    manager = pytest.importorskip("jupyter_client.manager")
    if path.stem == "13_real_models":  # a real (tiny random) Hugging Face model: the hf extra, Python >= 3.11
        pytest.importorskip("transformers", reason="chapter 13 needs the hf extra (transformers needs Python 3.11)")
        pytest.importorskip("peft", reason="chapter 13 needs the hf extra: pip install -e '.[hf]'")
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
    ipython_dir = tmp_path / "ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-figure-records.py").write_text(FIGURE_HOOK)
    records_file = tmp_path / "figures.jsonl"
    records_file.touch()
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir), "RLTUTOR_FIGURE_RECORDS": str(records_file)}
    env.pop("MPLBACKEND", None)  # the kernel's inline backend, as in the book build (Agg would show nothing)
    t0 = time.perf_counter()
    try:
        client.execute(env=env)
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"{path.name}: a cell failed:\n{str(e)[-3000:]}", pytrace=False)
    seconds = time.perf_counter() - t0
    records = figure_records(nb, records_file.read_text().splitlines())
    out = os.environ.get("RLTUTOR_EXECUTED_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(out) / path.name)
        (Path(out) / f"{path.stem}.figures.json").write_text(json.dumps(records, indent=1))
    print(f"{path.name}: {seconds:.0f} s, {len(records)} figures")
    where = lambda r: f"cell {r['cell']}" if r["cell"] is not None else "a widget's figure"  # noqa: E731
    small = [
        f"{where(r)}: {r['smallest']!r} is {shown_px(r):.1f} px as shown ({r['min_pt']:g} pt at {r['dpi']:g} dpi, "
        f"{r.get('width_px')} px wide)"
        for r in records
        if r.get("min_px") is not None and shown_px(r) < MIN_TEXT_PX
    ]
    outside = [
        f"{where(r)}: a band of {b['ylabel']!r} ({b['title']!r}) spans [{b['ymin']:.3g}, {b['ymax']:.3g}]"
        for r in records
        for b in r["bands"]
        if bounded(b["ylabel"])
        and not (bounded(b["ylabel"])[0] - 1e-9 <= b["ymin"] and b["ymax"] <= bounded(b["ylabel"])[1] + 1e-9)
    ]
    assert not small, f"{path.name}: text under {MIN_TEXT_PX:g} px in a figure:\n" + "\n".join(small)
    assert not outside, f"{path.name}: a band outside the bounds its axis names:\n" + "\n".join(outside)


def test_the_figure_hook_records_the_smallest_text_and_every_band(tmp_path):
    """The kernel's hook, run in a fresh interpreter: a 7 pt label at 100 dpi is 9.7 px, the band's range
    is recorded as drawn, and the record's SHA-1 is that of the PNG's bytes (how the book finds it)."""
    import subprocess
    import sys

    records = tmp_path / "records.jsonl"
    script = FIGURE_HOOK + (
        "\nimport hashlib, io\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(4, 3), dpi=100)\n"
        "ax.fill_between([0, 1, 2], [-0.5, 0.0, 0.2], [0.5, 1.5, 0.9], alpha=0.2)\n"
        "ax.set_ylabel('rate (fraction)')\nax.text(0.5, 0.5, 'small', fontsize=7)\nax.text(0.5, 0.2, '', fontsize=3)\n"
        "buf = io.BytesIO()\nfig.savefig(buf, format='png', dpi=100)\n"
        "print(hashlib.sha1(buf.getvalue()).hexdigest())\n"
    )
    env = {**os.environ, "RLTUTOR_FIGURE_RECORDS": str(records)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert record["min_pt"] == 7 and record["smallest"] == "small"  # the empty text is not drawn: not counted
    assert abs(record["min_px"] - 7 * 100 / 72) < 1e-9 and record["width_px"] == 400
    assert record["sha1"] == done.stdout.strip()
    (band,) = record["bands"]
    assert band["ylabel"] == "rate (fraction)" and band["ymin"] == -0.5 and band["ymax"] == 1.5
    assert bounded(band["ylabel"]) == (0.0, 1.0) and bounded("return (steps)") is None
    assert shown_px({"min_px": 14.0, "width_px": 2 * COLUMN_PX}) == 7.0  # shrunk to the column: half
